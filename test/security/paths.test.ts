/** Path attacks against the gate and the tools, with the real scope and real files. */
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { decide } from '../../src/policy/gate.js';
import { policyFor } from '../../src/policy/policy.js';
import { Scope } from '../../src/policy/scope.js';
import { editFileTool } from '../../src/tools/edit-file.js';
import { readFileTool } from '../../src/tools/read-file.js';
import type { Tool, ToolContext } from '../../src/tools/types.js';
import { writeFileTool } from '../../src/tools/write-file.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

function setup() {
  const root = tempDir();
  const outside = tempDir();
  writeFiles(root, { 'src/inside.txt': 'inside\n', '.git/config': '[core]\n' });
  writeFiles(outside, { 'target.txt': 'outside\n' });
  const scope = new Scope({ root, writable: ['.'] });
  const ctx: ToolContext = {
    cwd: root,
    signal: new AbortController().signal,
    resolve: (p, a) => scope.resolve(p, a),
  };
  const gate = (tool: Tool, args: unknown) =>
    decide(tool, args, {
      policy: policyFor({ mode: 'edit', scope, config: configSchema.parse({}), sandbox: false }),
      hookBase: { session_id: 't', cwd: root, mode: 'edit' },
    });
  return { root, outside, scope, ctx, gate };
}

describe('path attacks', () => {
  it('a symlink swapped between the gate and the write is caught at the write', async () => {
    const { root, outside, ctx, gate } = setup();
    mkdirSync(join(root, 'dir'));
    const args = { path: 'dir/file.txt', content: 'pwned' };
    expect((await gate(writeFileTool, args)).kind).toBe('allow');
    // the race: after the gate said yes, the folder becomes a link out of the workspace
    rmSync(join(root, 'dir'), { recursive: true });
    symlinkSync(outside, join(root, 'dir'));
    await expect(writeFileTool.execute(args, ctx)).rejects.toThrow(/outside the writable scope/);
    expect(existsSync(join(outside, 'file.txt'))).toBe(false);
  });

  it('an edit through a symlink swapped after the gate is refused too', async () => {
    const { root, outside, ctx, gate } = setup();
    writeFileSync(join(root, 'victim.txt'), 'outside\n');
    const args = { path: 'victim.txt', old_string: 'outside', new_string: 'pwned' };
    expect((await gate(editFileTool, args)).kind).toBe('allow');
    rmSync(join(root, 'victim.txt'));
    symlinkSync(join(outside, 'target.txt'), join(root, 'victim.txt'));
    await expect(editFileTool.execute(args, ctx)).rejects.toThrow(/outside the writable scope/);
    expect(readFileSync(join(outside, 'target.txt'), 'utf8')).toBe('outside\n');
  });

  it.each([
    ['../escape.txt'],
    ['src/../../escape.txt'],
    ['./src/./../../escape.txt'],
    ['src/%2e%2e/../../../escape.txt'],
  ])('denies the .. path %s', async (path) => {
    const { gate } = setup();
    const decision = await gate(writeFileTool, { path, content: 'x' });
    expect(decision).toMatchObject({ kind: 'deny', deny: 'scope' });
  });

  it('denies absolute paths outside, and reads outside the workspace', async () => {
    const { outside, gate } = setup();
    expect(await gate(writeFileTool, { path: join(outside, 'x'), content: 'x' })).toMatchObject({
      kind: 'deny',
    });
    expect(await gate(readFileTool, { path: join(outside, 'target.txt') })).toMatchObject({ kind: 'deny' });
    expect(await gate(readFileTool, { path: '/etc/passwd' })).toMatchObject({ kind: 'deny' });
  });

  it('mixed-case .git is still .git', async () => {
    const { gate } = setup();
    for (const path of ['.git/config', '.Git/config', '.GIT/hooks/post-checkout', 'a/b/.gIt/config']) {
      expect(await gate(writeFileTool, { path, content: 'x' })).toMatchObject({
        kind: 'deny',
        deny: 'scope',
      });
    }
  });

  it('names a filesystem may fold into .git or keel config are denied (finding 10)', async () => {
    const { root, gate } = setup();
    for (const path of [
      '.git./config',
      '.GIT~1/config',
      '.git::$INDEX_ALLOCATION/config',
      'keel.toml.',
      'KEEL~1.TOM',
      'keel.toml::$DATA',
      '.keel ./config.toml',
    ]) {
      expect(await gate(writeFileTool, { path, content: '[core]\n' }), path).toMatchObject({
        kind: 'deny',
        deny: 'scope',
      });
      expect(existsSync(join(root, path)), path).toBe(false);
    }
  });

  it('unicode lookalikes are ordinary names that stay inside the workspace', async () => {
    const { root, ctx, gate } = setup();
    // fullwidth full stops and a one-dot leader are not "..": they name files inside the workspace
    for (const path of ['\uff0e\uff0e/x.txt', '\u2024\u2024/x.txt', 'src/\u2025/x.txt']) {
      expect((await gate(writeFileTool, { path, content: 'x' })).kind).toBe('allow');
      await writeFileTool.execute({ path, content: 'x' }, ctx);
      expect(existsSync(join(root, path))).toBe(true);
    }
    expect(await gate(writeFileTool, { path: '..\u0000/x', content: 'x' })).toMatchObject({ kind: 'deny' });
  });
});
