/**
 * The check-then-use race: another process flips a folder inside the scope between a real folder and a
 * symlink out of it while read_file, write_file, edit_file and grep run. Whatever the timing, nothing may
 * land outside and no outside byte may come back as an in-scope file.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SafetyNet } from '../../src/policy/safety-net.js';
import { Scope } from '../../src/policy/scope.js';
import { removeNoFollow, restoreNoFollow } from '../../src/policy/undo-paths.js';
import { editFileTool } from '../../src/tools/edit-file.js';
import { grepTool } from '../../src/tools/grep.js';
import { readFileTool } from '../../src/tools/read-file.js';
import type { ToolContext } from '../../src/tools/types.js';
import { writeFileTool } from '../../src/tools/write-file.js';
import { chatBodies, keel, keelHome, model, modelFlags, requestMessages } from '../e2e/harness.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

const ROUNDS = 200;
// one binary run, one model turn asking for this many of each call
const BINARY_ROUNDS = 40;
const SECRET = 'OUTSIDE-SECRET-4711';

// The concurrent process: `dir` is the real folder, then gone, then the symlink out, then gone, and again
const FLIPPER = `
const { existsSync, lstatSync, renameSync, rmSync } = require('node:fs');
const [real, link, dir, stop] = process.argv.slice(1);
let flips = 0;
process.stdout.write('flipping ');
while (!existsSync(stop)) {
  for (let i = 0; i < 200; i++) {
    try {
      renameSync(real, dir);
      // linger as the real folder, where the scope check says yes, then flip to the link for the use
      for (let k = 0; k < 30; k++) existsSync(dir);
      renameSync(dir, real);
      renameSync(link, dir);
      renameSync(dir, link);
      flips++;
    } catch {
      // a tool made \`dir\` while it was gone (write_file creates missing folders): the attacker clears it
      try { if (!lstatSync(dir).isSymbolicLink()) rmSync(dir, { recursive: true, force: true }); } catch {}
    }
  }
}
process.stdout.write(String(flips));
`;

describe('a folder swapped for a symlink while the file tools use it', () => {
  // the race's window held open: the swap happens right after the scope check said yes, every time
  it.each([
    ['a folder', 'dir', 'dir/secret.txt'],
    ['a folder two levels up', 'dir', 'dir/sub/secret.txt'],
    ["the file's own name", 'dir/secret.txt', 'dir/secret.txt'],
  ])(
    '%s swapped right after the check sends nothing outside and reads nothing from there',
    async (_, swapped, path) => {
      const root = tempDir();
      const outside = tempDir();
      const secrets = { 'secret.txt': `${SECRET}\n`, 'sub/secret.txt': `${SECRET}\n` };
      for (const [name, text] of Object.entries(secrets)) {
        mkdirSync(dirname(join(outside, name)), { recursive: true });
        writeFileSync(join(outside, name), text);
      }
      const scope = new Scope({ root, writable: ['.'] });
      const target = join(outside, relative('dir', swapped));
      const reset = () => {
        rmSync(join(root, 'dir'), { recursive: true, force: true });
        mkdirSync(join(root, 'dir', 'sub'), { recursive: true });
        writeFileSync(join(root, 'dir', 'secret.txt'), 'inside\n');
        writeFileSync(join(root, 'dir', 'sub', 'secret.txt'), 'inside\n');
      };
      const ctx: ToolContext = {
        cwd: root,
        signal: new AbortController().signal,
        resolve: (p, a) => {
          const checked = scope.resolve(p, a);
          rmSync(join(root, swapped), { recursive: true });
          symlinkSync(target, join(root, swapped));
          return checked;
        },
      };
      const calls: Array<() => Promise<{ output: string }>> = [
        () => readFileTool.execute({ path }, ctx),
        () => grepTool.execute({ pattern: 'SECRET|inside', path }, ctx),
        () => writeFileTool.execute({ path, content: 'pwned\n' }, ctx),
        () => writeFileTool.execute({ path: `${dirname(path)}/new/made.txt`, content: 'pwned\n' }, ctx),
        () => editFileTool.execute({ path, old_string: 'inside', new_string: 'pwned' }, ctx),
        () => editFileTool.execute({ path, old_string: SECRET, new_string: 'pwned' }, ctx),
      ];
      for (const call of calls) {
        reset();
        const result = await call().then(
          (r) => r.output,
          (err: Error) => err.message,
        );
        expect(result).not.toContain(SECRET);
      }
      expect(listTree(outside)).toEqual(['secret.txt', 'sub', 'sub/secret.txt']);
      for (const name of Object.keys(secrets))
        expect(readFileSync(join(outside, name), 'utf8')).toBe(`${SECRET}\n`);
    },
  );

  it('writes, edits and reads stay inside the scope for every interleaving', async () => {
    const root = tempDir();
    const outside = tempDir();
    writeFileSync(join(outside, 'secret.txt'), `${SECRET}\n`);
    writeFileSync(join(outside, 'edit.txt'), `${SECRET}\n`);
    mkdirSync(join(root, 'real'));
    writeFileSync(join(root, 'real', 'secret.txt'), 'inside\n');
    symlinkSync(outside, join(root, 'link'));
    const scope = new Scope({ root, writable: ['.'] });
    const ctx: ToolContext = {
      cwd: root,
      signal: new AbortController().signal,
      resolve: (p, a) => scope.resolve(p, a),
    };

    const flipper = await startFlipper(root);
    let flips = 0;

    const done = { read: 0, write: 0, edit: 0, grep: 0 };
    const leaked: string[] = [];
    const attempt = async (kind: keyof typeof done, call: () => Promise<{ output: string }>) => {
      try {
        const { output } = await call();
        done[kind]++;
        if (output.includes(SECRET)) leaked.push(`${kind}: ${output}`);
      } catch {
        // refused, or the folder was missing at that moment: both are fine outcomes
      }
    };
    try {
      for (let i = 0; i < ROUNDS; i++) {
        // inside, edit.txt says `inside`; outside, it says the secret
        try {
          writeFileSync(join(root, 'real', 'edit.txt'), 'inside\n');
        } catch {
          // the folder is `dir` just now; the edits then work on what an earlier round left
        }
        await Promise.all([
          attempt('write', () => writeFileTool.execute({ path: `dir/w${i}.txt`, content: 'pwned\n' }, ctx)),
          attempt('edit', () =>
            editFileTool.execute({ path: 'dir/edit.txt', old_string: 'inside', new_string: 'edited' }, ctx),
          ),
          attempt('edit', () =>
            editFileTool.execute(
              { path: 'dir/edit.txt', old_string: SECRET, new_string: 'pwned', replace_all: true },
              ctx,
            ),
          ),
          attempt('read', () => readFileTool.execute({ path: 'dir/secret.txt' }, ctx)),
          attempt('grep', () => grepTool.execute({ pattern: 'SECRET|inside', path: 'dir/secret.txt' }, ctx)),
          attempt('grep', () => grepTool.execute({ pattern: 'SECRET|inside', path: 'dir' }, ctx)),
          attempt('write', () =>
            writeFileTool.execute({ path: `dir/new${i}/deep.txt`, content: 'pwned\n' }, ctx),
          ),
        ]);
      }
    } finally {
      flips = await flipper.stop();
    }

    // the race really ran: the folder flipped, and the tools did their work whenever it was real
    expect(flips).toBeGreaterThan(0);
    expect(done.write).toBeGreaterThan(0);
    expect(done.read).toBeGreaterThan(0);
    expect(done.grep).toBeGreaterThan(0);
    expect(listTree(outside)).toEqual(['edit.txt', 'secret.txt']);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe(`${SECRET}\n`);
    expect(readFileSync(join(outside, 'edit.txt'), 'utf8')).toBe(`${SECRET}\n`);
    expect(leaked).toEqual([]);
  });
});

describe("the safety net's copy before a write", () => {
  it('holds nothing from outside when the folder was swapped after the check, so undo cannot bring it in', () => {
    const root = tempDir();
    const outside = tempDir();
    writeFileSync(join(outside, 'secret.txt'), `${SECRET}\n`);
    mkdirSync(join(root, 'dir'));
    writeFileSync(join(root, 'dir', 'secret.txt'), 'inside\n');
    const undoDir = join(tempDir(), 'undo');
    const safety = new SafetyNet({ root, sessionId: 's-race', undoDir });
    const path = join(root, 'dir', 'secret.txt');
    expect(scopeOf(root).resolve('dir/secret.txt', 'write')).toBe(path);
    // the gate said yes to this canonical path; now the folder is a symlink out, and the net saves the file
    rmSync(join(root, 'dir'), { recursive: true });
    symlinkSync(outside, join(root, 'dir'));
    const [record] = safety.beforeWrite([path]);
    const copies = listTree(undoDir).filter((f) => f.includes('files/'));
    for (const copy of copies) expect(readFileSync(join(undoDir, copy), 'utf8')).not.toContain(SECRET);
    expect(record).toMatchObject({ kind: 'copy', skipped: [{ path }] });
    expect(record?.kind === 'copy' && record.skipped?.[0]?.reason).toMatch(/changed after the scope check/);
  });
});

describe("keel undo's file steps", () => {
  it('restore and remove stay inside while the folder flips', async () => {
    const root = tempDir();
    const outside = tempDir();
    writeFileSync(join(outside, 'victim.txt'), `${SECRET}\n`);
    mkdirSync(join(root, 'real'));
    symlinkSync(outside, join(root, 'link'));
    const copy = join(tempDir(), 'saved');
    writeFileSync(copy, 'saved\n');
    const flipper = await startFlipper(root);
    let flips = 0;
    let restored = 0;
    try {
      // undo's steps are synchronous and quick, so they get more rounds for the same chances
      for (let i = 0; i < ROUNDS * 10; i++) {
        try {
          restoreNoFollow(join(root, 'dir', `r${i}.txt`), copy, 0o644, root);
          restored++;
        } catch {
          // refused, or the folder was gone at that moment
        }
        try {
          removeNoFollow(join(root, 'dir', 'victim.txt'), root, root);
        } catch {
          // the same
        }
      }
    } finally {
      flips = await flipper.stop();
    }
    expect(flips).toBeGreaterThan(0);
    expect(restored).toBeGreaterThan(0);
    expect(listTree(outside)).toEqual(['victim.txt']);
  });
});

describe('the same race through keel edit', () => {
  it('a host process flips the folder while the model writes, edits and reads: nothing lands or leaks', async () => {
    const repo = gitRepo({ 'real/secret.txt': 'inside\n', 'real/edit.txt': 'inside\n' });
    const outside = tempDir();
    writeFileSync(join(outside, 'secret.txt'), `${SECRET}\n`);
    writeFileSync(join(outside, 'edit.txt'), `${SECRET}\n`);
    symlinkSync(outside, join(repo, 'link'));
    const calls = Array.from({ length: BINARY_ROUNDS }, (_, i) => [
      { name: 'write_file', arguments: { path: `dir/w${i}.txt`, content: 'pwned\n' } },
      // each call differs a little: the loop detector stops a run that repeats one call
      { name: 'read_file', arguments: { path: 'dir/secret.txt', limit: i + 1 } },
      {
        name: 'edit_file',
        arguments: { path: 'dir/edit.txt', old_string: SECRET, new_string: `pwned${i}`, replace_all: true },
      },
    ]).flat();
    const server = await model([{ tool_calls: calls }, { text: 'Done.' }]);
    const flipper = await startFlipper(repo);
    let run: Awaited<ReturnType<typeof keel>>;
    let flips = 0;
    try {
      run = await keel(['edit', ...modelFlags(server), '--json', 'write the files'], {
        cwd: repo,
        home: keelHome(),
      });
    } finally {
      flips = await flipper.stop();
    }
    const doc = JSON.parse(run.stdout);
    expect(doc).toMatchObject({ code: 'COMPLETED' });
    // the race really ran, and writes went through whenever the folder was real
    expect(flips).toBeGreaterThan(0);
    expect(doc.files_changed.length).toBeGreaterThan(0);
    const results = requestMessages(chatBodies(server)[1]).filter((m) => m.role === 'tool');
    expect(results).toHaveLength(calls.length);
    expect(results.filter((m) => String(m.content).includes(SECRET))).toEqual([]);
    expect(run.stdout).not.toContain(SECRET);
    expect(listTree(outside)).toEqual(['edit.txt', 'secret.txt']);
    expect(readFileSync(join(outside, 'edit.txt'), 'utf8')).toBe(`${SECRET}\n`);
  });
});

/**
 * Start the concurrent process flipping `root/dir` between `root/real` and the symlink `root/link`; resolves
 * once it flips. `stop` ends it and resolves to how many full flips it made.
 */
async function startFlipper(root: string): Promise<{ stop(): Promise<number> }> {
  const stopFile = join(root, '.stop');
  const child = spawn(
    process.execPath,
    ['-e', FLIPPER, join(root, 'real'), join(root, 'link'), join(root, 'dir'), stopFile],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<void>((done) => child.on('exit', () => done()));
  await new Promise((started) => child.stdout.once('data', started));
  return {
    async stop() {
      writeFileSync(stopFile, '');
      await exited;
      return Number(out.split(' ')[1]);
    },
  };
}

function scopeOf(root: string): Scope {
  return new Scope({ root, writable: ['.'] });
}

/** Every entry under `dir`, relative and sorted. */
function listTree(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).sort();
}
