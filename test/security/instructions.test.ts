/** AGENTS.md and .keel/instructions.md from a hostile repository: links out, FIFOs, folders, huge files. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadInstructions } from '../../src/agent/instructions.js';
import { chatBodies, keel, keelHome, lastSessionEvents, model, modelFlags } from '../e2e/harness.js';
import { gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

const SECRET = 'KEEL-SECRET-MARKER-7f3a9c';

/** The instruction files a session recorded as used. */
function usedInstructions(home: string): unknown {
  const start = lastSessionEvents(home).find((e) => e.type === 'session_start');
  return start?.data.instructions;
}

describe('instruction files through the real binary', () => {
  it('an AGENTS.md that is a FIFO does not hang keel ask', async () => {
    const repo = gitRepo();
    execFileSync('mkfifo', [join(repo, 'AGENTS.md')]);
    const home = keelHome();
    const server = await model([{ text: 'answered' }]);
    // reading the FIFO would block forever; the harness kills keel after the timeout
    const run = await keel(['ask', ...modelFlags(server), '--json', 'hello'], {
      cwd: repo,
      home,
      timeoutMs: 15_000,
    });
    expect(run.signal).toBeNull();
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED' });
    expect(run.ms).toBeLessThan(10_000);
    expect(usedInstructions(home)).toEqual([]);
  });

  it('instructions symlinked out of the workspace never reach the model; a link inside does', async () => {
    const repo = gitRepo({ 'docs/agents.md': 'Use tabs, said the docs.\n' });
    const outside = tempDir();
    writeFiles(outside, {
      'secret.md': `${SECRET} in AGENTS\n`,
      'keel/instructions.md': `${SECRET} in .keel\n`,
    });
    symlinkSync(join(outside, 'secret.md'), join(repo, 'AGENTS.md'));
    mkdirSync(join(repo, '.keel'));
    symlinkSync(join(outside, 'keel', 'instructions.md'), join(repo, '.keel', 'instructions.md'));
    const home = keelHome();
    const server = await model([{ text: 'answered' }]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'hello'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(JSON.stringify(chatBodies(server))).not.toContain(SECRET);
    expect(JSON.stringify(lastSessionEvents(home))).not.toContain(SECRET);
    expect(usedInstructions(home)).toEqual([]);

    // the same layout with the link pointing inside the workspace is an ordinary AGENTS.md
    const inside = gitRepo({ 'docs/agents.md': 'Use tabs, said the docs.\n' });
    symlinkSync('docs/agents.md', join(inside, 'AGENTS.md'));
    const server2 = await model([{ text: 'answered' }]);
    const run2 = await keel(['ask', ...modelFlags(server2), '--json', 'hello'], { cwd: inside, home });
    expect(run2.code).toBe(0);
    expect(JSON.stringify(chatBodies(server2))).toContain('Use tabs, said the docs.');
    expect(usedInstructions(home)).toEqual(['AGENTS.md']);
  });
});

describe('loadInstructions', () => {
  it('skips a folder, a dangling link and a parent folder linked outside, saying why', () => {
    const root = tempDir();
    const outside = tempDir();
    writeFiles(outside, { 'instructions.md': SECRET });
    mkdirSync(join(root, 'AGENTS.md'));
    symlinkSync(outside, join(root, '.keel'));
    const got = loadInstructions(root);
    expect(got.text).toBe('');
    expect(got.skipped).toEqual([
      { file: 'AGENTS.md', reason: 'it is a folder' },
      { file: join('.keel', 'instructions.md'), reason: 'it leads outside the workspace' },
    ]);
    const dangling = tempDir();
    symlinkSync(join(outside, 'gone.md'), join(dangling, 'AGENTS.md'));
    expect(loadInstructions(dangling).skipped).toEqual([
      { file: 'AGENTS.md', reason: 'it is a dangling symlink' },
    ]);
    // a link to a device would read forever (/dev/zero) or block (/dev/stdin)
    const device = tempDir();
    symlinkSync('/dev/zero', join(device, 'AGENTS.md'));
    expect(loadInstructions(device).skipped).toEqual([
      { file: 'AGENTS.md', reason: 'it leads outside the workspace' },
    ]);
  });

  it('reads only the cap of a huge file, fast', () => {
    const root = tempDir();
    const path = join(root, 'AGENTS.md');
    writeFileSync(path, `${'rule\n'.repeat(10_000)}`);
    // 4 GiB: reading it whole would exceed the Buffer limit or take far too long
    truncateSync(path, 4 * 1024 ** 3);
    const started = Date.now();
    const got = loadInstructions(root);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(got.files).toEqual(['AGENTS.md']);
    expect(got.text).toMatch(/^# AGENTS\.md\nrule\n/);
    expect(got.text).toMatch(/\[\.\.\. AGENTS\.md cut at 16000 chars\]$/);
  });

  it('decodes a file that is not UTF-8 as read_file does', () => {
    const root = tempDir();
    writeFileSync(join(root, 'AGENTS.md'), Buffer.from('R\xe9pondre en fran\xe7ais.\n', 'latin1'));
    expect(loadInstructions(root).text).toBe('# AGENTS.md\nRépondre en français.');
  });
});
