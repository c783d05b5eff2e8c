/** Undo's file operations never reach outside the workspace: not through a link, not through a hard link. */
import { linkSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SafetyNet } from '../../src/policy/safety-net.js';
import { applyUndo, planUndo, UndoRefused } from '../../src/policy/undo.js';
import { checkParents, LinkedPath } from '../../src/policy/undo-paths.js';
import { tempDir, writeFiles } from '../helpers/tmp.js';

describe('undo outside git', () => {
  it('restores a file the session swapped for a hard link to an outside file without writing the outside one', () => {
    const root = tempDir();
    const outside = tempDir();
    writeFiles(root, { 'a.txt': 'original\n' });
    writeFiles(outside, { 'secret.txt': 'outside, must not change\n' });
    const records = new SafetyNet({ root, sessionId: 's', undoDir: tempDir() }).beforeWrite([
      join(root, 'a.txt'),
    ]);
    rmSync(join(root, 'a.txt'));
    linkSync(join(outside, 'secret.txt'), join(root, 'a.txt'));
    applyUndo(planUndo(records, root));
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('original\n');
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('outside, must not change\n');
  });

  it('refuses a file whose folder became a link, at plan time, naming the link', () => {
    const root = tempDir();
    const outside = tempDir();
    writeFiles(root, { 'src/a.txt': 'original\n' });
    writeFiles(outside, { 'a.txt': 'outside\n' });
    const records = new SafetyNet({ root, sessionId: 's', undoDir: tempDir() }).beforeWrite([
      join(root, 'src/a.txt'),
    ]);
    rmSync(join(root, 'src'), { recursive: true });
    symlinkSync(outside, join(root, 'src'));
    expect(() => planUndo(records, root)).toThrow(UndoRefused);
    expect(() => planUndo(records, root)).toThrow(`${join(root, 'src')} is now a symbolic link`);
    expect(readFileSync(join(outside, 'a.txt'), 'utf8')).toBe('outside\n');
  });
});

describe('checkParents', () => {
  it('accepts real folders and missing ones, and refuses a link anywhere above the path', () => {
    const root = tempDir();
    writeFiles(root, { 'a/b/c.txt': 'c\n' });
    expect(() => checkParents(join(root, 'a/b/c.txt'), root)).not.toThrow();
    expect(() => checkParents(join(root, 'a/missing/deeper/x.txt'), root)).not.toThrow();
    symlinkSync(join(root, 'a'), join(root, 'link'));
    expect(() => checkParents(join(root, 'link/b/c.txt'), root)).toThrow(LinkedPath);
    expect(() => checkParents('/etc/passwd', root)).toThrow(/not inside/);
  });
});
