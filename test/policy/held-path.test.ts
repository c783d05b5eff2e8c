/** Held paths: the walk from `/` that never follows a symlink, and the file opened and rechecked through it. */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HeldDir, openHeld, openHeldSync } from '../../src/policy/held-path.js';
import { ScopeError } from '../../src/policy/scope.js';
import { writeAtomic } from '../../src/tools/file-change.js';
import { tempDir } from '../helpers/tmp.js';

function setup() {
  const root = tempDir();
  const outside = tempDir();
  mkdirSync(join(root, 'a', 'b'), { recursive: true });
  writeFileSync(join(root, 'a', 'b', 'file.txt'), 'inside\n');
  writeFileSync(join(outside, 'file.txt'), 'outside\n');
  symlinkSync(outside, join(root, 'link'));
  symlinkSync(join(outside, 'file.txt'), join(root, 'a', 'filelink'));
  return { root, outside };
}

describe('HeldDir.walk', () => {
  it('holds a real folder and names its entries through the descriptor', () => {
    const { root } = setup();
    const dir = HeldDir.walk(join(root, 'a', 'b'));
    try {
      expect(dir.path).toBe(join(root, 'a', 'b'));
      expect(dir.lstat('file.txt')?.isFile()).toBe(true);
      // the held folder stays itself when its path is moved away
      renameSync(join(root, 'a'), join(root, 'moved'));
      expect(dir.lstat('file.txt')?.isFile()).toBe(true);
    } finally {
      dir.close();
    }
  });

  it('refuses a symlink at any component, and says which one', () => {
    const { root } = setup();
    expect(() => HeldDir.walk(join(root, 'link'))).toThrow(ScopeError);
    expect(() => HeldDir.walk(join(root, 'link', 'deeper'), true)).toThrow(
      `${join(root, 'link')} changed after the scope check`,
    );
  });

  it('makes missing folders in their held parents, and none past a symlink', () => {
    const { root, outside } = setup();
    HeldDir.walk(join(root, 'x', 'y', 'z'), true).close();
    expect(readdirSync(join(root, 'x', 'y'))).toEqual(['z']);
    expect(() => HeldDir.walk(join(root, 'link', 'made'), true)).toThrow(ScopeError);
    expect(readdirSync(outside)).toEqual(['file.txt']);
  });

  it('refuses relative paths and `..`, which canonical paths never have', () => {
    expect(() => HeldDir.walk('a/b')).toThrow(/absolute/);
    expect(() => HeldDir.walk('/tmp/../etc')).toThrow(/canonical/);
  });

  it('a plain file on the way is a plain error that names the real path', () => {
    const { root } = setup();
    let message = '';
    try {
      HeldDir.walk(join(root, 'a', 'b', 'file.txt', 'c'));
    } catch (err) {
      expect(err).not.toBeInstanceOf(ScopeError);
      message = (err as Error).message;
    }
    expect(message).toContain('ENOTDIR');
    expect(message).toContain(join(root, 'a', 'b', 'file.txt'));
    expect(message).not.toContain('/proc/self/fd');
  });
});

describe('openHeld', () => {
  it('opens a file, undefined when it or its folder is missing', async () => {
    const { root } = setup();
    const file = await openHeld(join(root, 'a', 'b', 'file.txt'));
    expect(file?.stats.isFile()).toBe(true);
    expect((await file?.handle.readFile())?.toString()).toBe('inside\n');
    file?.recheck();
    await file?.close();
    expect(await openHeld(join(root, 'a', 'b', 'none.txt'))).toBeUndefined();
    expect(await openHeld(join(root, 'none', 'x.txt'))).toBeUndefined();
  });

  it("refuses a symlink as the file's own name and on the way", async () => {
    const { root } = setup();
    await expect(openHeld(join(root, 'a', 'filelink'))).rejects.toThrow(ScopeError);
    await expect(openHeld(join(root, 'link', 'file.txt'))).rejects.toThrow(ScopeError);
  });

  it('opens a FIFO without waiting for a writer', async () => {
    const { root } = setup();
    execFileSync('mkfifo', [join(root, 'fifo')]);
    const file = await openHeld(join(root, 'fifo'));
    expect(file?.stats.isFIFO()).toBe(true);
    await file?.close();
  });

  it('recheck fails when the name no longer holds the file that was read', async () => {
    const { root, outside } = setup();
    const file = await openHeld(join(root, 'a', 'b', 'file.txt'));
    if (!file) throw new Error('file.txt should open');
    try {
      renameSync(join(root, 'a', 'b', 'file.txt'), join(root, 'gone.txt'));
      symlinkSync(join(outside, 'file.txt'), join(root, 'a', 'b', 'file.txt'));
      expect(() => file.recheck()).toThrow(/changed while keel read it/);
    } finally {
      await file.close();
    }
  });
});

describe('openHeldSync', () => {
  it('gives a descriptor for a file, undefined when missing, and refuses a symlink', () => {
    const { root } = setup();
    const held = openHeldSync(join(root, 'a', 'b', 'file.txt'));
    if (!held) throw new Error('file.txt should open');
    try {
      expect(readFileSync(held.fd, 'utf8')).toBe('inside\n');
      expect(held.stats.isFile()).toBe(true);
    } finally {
      closeSync(held.fd);
    }
    expect(openHeldSync(join(root, 'a', 'none.txt'))).toBeUndefined();
    expect(() => openHeldSync(join(root, 'a', 'filelink'))).toThrow(ScopeError);
    expect(() => openHeldSync(join(root, 'link', 'file.txt'))).toThrow(ScopeError);
  });
});

describe('writeAtomic', () => {
  it('writes in the held folder, and leaves no temp file when the target is a folder', async () => {
    const { root } = setup();
    await writeAtomic(join(root, 'a', 'new', 'made.txt'), 'made\n', 0o644, true);
    expect(readdirSync(join(root, 'a', 'new'))).toEqual(['made.txt']);
    await expect(writeAtomic(join(root, 'a', 'b'), 'x')).rejects.toThrow(join(root, 'a', 'b'));
    expect(readdirSync(join(root, 'a'))).toEqual(['b', 'filelink', 'new']);
  });

  it('replaces a symlink put at the name instead of writing through it', async () => {
    const { root, outside } = setup();
    await writeAtomic(join(root, 'a', 'filelink'), 'inside\n');
    expect(readdirSync(outside)).toEqual(['file.txt']);
    const file = await openHeld(join(root, 'a', 'filelink'));
    expect((await file?.handle.readFile())?.toString()).toBe('inside\n');
    await file?.close();
  });
});
