import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalize, Scope, ScopeError } from '../../src/policy/scope.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

function workspace() {
  const root = tempDir();
  const outside = tempDir();
  writeFiles(root, { 'src/a.ts': 'x', '.git/config': '[core]' });
  writeFiles(outside, { 'secret.txt': 'pw' });
  return { root, outside };
}

describe('scope', () => {
  it('allows reads and writes inside the workspace', () => {
    const { root } = workspace();
    const scope = new Scope({ root, writable: ['.'] });
    expect(scope.resolve('src/a.ts', 'write')).toBe(join(root, 'src/a.ts'));
    expect(scope.resolve('src/new/deep.ts', 'write')).toBe(join(root, 'src/new/deep.ts'));
    expect(scope.resolve('./src/../src/a.ts', 'read')).toBe(join(root, 'src/a.ts'));
  });

  it('denies .. and absolute paths that leave the workspace', () => {
    const { root, outside } = workspace();
    const scope = new Scope({ root, writable: ['.'] });
    expect(() => scope.resolve('../x.txt', 'write')).toThrow(ScopeError);
    expect(() => scope.resolve(join(outside, 'secret.txt'), 'read')).toThrow(/outside the workspace/);
    expect(() => scope.resolve('/etc/passwd', 'write')).toThrow(/outside the writable scope/);
  });

  it('follows symlinks before deciding: a link out of the repo is outside', () => {
    const { root, outside } = workspace();
    symlinkSync(outside, join(root, 'escape'));
    symlinkSync(join(outside, 'secret.txt'), join(root, 'link.txt'));
    const scope = new Scope({ root, writable: ['.'] });
    expect(() => scope.resolve('escape/secret.txt', 'read')).toThrow(ScopeError);
    expect(() => scope.resolve('escape/new.txt', 'write')).toThrow(ScopeError);
    expect(() => scope.resolve('link.txt', 'write')).toThrow(ScopeError);
  });

  it('refuses a dangling symlink, whose target cannot be known safely', () => {
    const { root, outside } = workspace();
    symlinkSync(join(outside, 'not-yet.txt'), join(root, 'dangling'));
    const scope = new Scope({ root, writable: ['.'] });
    expect(() => scope.resolve('dangling', 'write')).toThrow(/dangling symlink/);
  });

  it('protects .git (any case) and keel config even inside the scope', () => {
    const { root } = workspace();
    const scope = new Scope({ root, writable: ['.'] });
    expect(() => scope.resolve('.git/config', 'write')).toThrow(/git internals/);
    expect(() => scope.resolve('.GIT/hooks/pre-commit', 'write')).toThrow(/git internals/);
    expect(() => scope.resolve('sub/.git/config', 'write')).toThrow(/git internals/);
    expect(() => scope.resolve('keel.toml', 'write')).toThrow(/project config/);
    expect(() => scope.resolve('.keel/config.toml', 'write')).toThrow(/project config/);
    expect(scope.resolve('.git/config', 'read')).toBe(join(root, '.git/config'));
  });

  it('protects every spelling of .git at any depth, and of keel config at the root and each writable top', () => {
    const { root } = workspace();
    mkdirSync(join(root, 'src/fixtures'), { recursive: true });
    const scope = new Scope({ root, writable: ['.', 'src'] });
    for (const path of [
      '.git./config',
      '.git ./config',
      '.GIT~1/config',
      'git~1/HEAD',
      '.git::$INDEX_ALLOCATION/config',
      '.g\u200cit/config',
      'sub/.Git. . /hooks/pre-commit',
    ])
      expect(() => scope.resolve(path, 'write'), path).toThrow(/git internals/);
    for (const path of [
      'keel.toml.',
      'KEEL.TOML ',
      'keel.toml::$DATA',
      'KEEL~1.TOM',
      '.KEEL./x',
      'src/keel.toml',
    ])
      expect(() => scope.resolve(path, 'write'), path).toThrow(/project config/);
    // ordinary names that only look alike, and config deeper than a writable top (fixtures) are files
    for (const path of [
      '.gitignore',
      'git',
      '.github/workflows/ci.yml',
      'keel.tomlx',
      'src/fixtures/keel.toml',
    ])
      expect(scope.resolve(path, 'write')).toBe(join(root, path));
  });

  it('narrows writes to the configured scope', () => {
    const { root } = workspace();
    mkdirSync(join(root, 'docs'));
    const scope = new Scope({ root, writable: ['src'] });
    expect(scope.resolve('src/a.ts', 'write')).toBe(join(root, 'src/a.ts'));
    expect(() => scope.resolve('docs/x.md', 'write')).toThrow(/outside the writable scope/);
    expect(scope.resolve('docs', 'read')).toBe(join(root, 'docs'));
  });

  it('protects extra folders such as KEEL_HOME', () => {
    const { root } = workspace();
    const scope = new Scope({ root, writable: ['.'], protectedDirs: ['state'] });
    expect(() => scope.resolve('state/keel.db', 'write')).toThrow(/keel's own state/);
  });

  it('canonicalizes a path whose tail does not exist yet', () => {
    const { root } = workspace();
    expect(canonicalize('a/b/../c', root)).toBe(join(root, 'a/c'));
    expect(() => canonicalize('a\0b', root)).toThrow(/NUL/);
  });
});
