// keel fix per test runner (issue 8): the wall time of a whole `keel fix` (snapshot, baseline, a scripted
// one-edit fix, verification, report, commit) over a bare run of the same suite. A fix runs the suite at
// least twice (baseline and verify), so the row that matters is the overhead beyond 2 bare runs.
// Run `npm run build` first. Prints one Markdown table; BENCH_RUNS sets the runs per runner (default 5).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScriptServer } from '../dist/model/script-server.js';
import { FIX_CASES } from './fix-cases.mjs';
import { runNodeWith } from './spawn-timed.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'b@x',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'b@x',
};
const git = (cwd, ...args) => spawnSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' });

/** A temporary git repository holding the fixture, with its dependencies installed by the case. */
function repoFor(c) {
  const dir = join(mkdtempSync(join(tmpdir(), 'keel-bench-fix-')), c.fixture);
  cpSync(join(root, 'test/fixtures/fix', c.fixture), dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial');
  c.setup?.(dir);
  return dir;
}

const rows = [];
for (const c of FIX_CASES) {
  const why = c.skip?.();
  if (why) {
    rows.push(`| ${c.runner} | skipped: ${why} | | | |`);
    continue;
  }
  const repo = repoFor(c);
  const original = readFileSync(join(repo, c.edit.path), 'utf8');
  if (!original.includes(c.edit.old))
    throw new Error(`${c.fixture}: the edit's old text is not in ${c.edit.path}`);
  const bare = [];
  const fixes = [];
  for (let i = 0; i < RUNS; i++) {
    // the user's own command, as they would type it, on the buggy code (the same suite the baseline runs)
    let t0 = process.hrtime.bigint();
    spawnSync('/bin/sh', ['-c', `${c.bare} >/dev/null 2>&1`], { cwd: repo, env: process.env });
    bare.push(ms(t0));

    const server = await startScriptServer({
      turns: [
        { tool_calls: [{ name: 'read_file', arguments: { path: c.edit.path } }] },
        { text: '1. Fix the bug the issue names.' },
        {
          tool_calls: [
            {
              name: 'edit_file',
              arguments: { path: c.edit.path, old_string: c.edit.old, new_string: c.edit.new },
            },
          ],
        },
        { text: 'Fixed.' },
      ],
    });
    const home = mkdtempSync(join(tmpdir(), 'keel-bench-home-'));
    t0 = process.hrtime.bigint();
    // not spawnSync: the scripted model answers from this process's event loop
    const r = await runNodeWith(
      [
        join(root, 'bin/keel.js'),
        'fix',
        '--repo',
        repo,
        '--issue',
        c.issue,
        '--json',
        '--provider',
        'openai',
        '--base-url',
        server.url,
        '--model',
        'bench',
      ],
      { cwd: home, env: { ...process.env, HOME: home, KEEL_HOME: home } },
    );
    fixes.push(ms(t0));
    await server.close();
    rmSync(home, { recursive: true, force: true });
    const doc = JSON.parse(r.stdout || '{}');
    if (r.status !== 0 || doc.status !== 'verified')
      throw new Error(`${c.runner}: keel fix did not verify (exit ${r.status}): ${doc.reason ?? r.stderr}`);
  }
  const b = median(bare);
  const f = median(fixes);
  rows.push(
    `| ${c.runner} | ${b.toFixed(0)} ms | ${(f / 1000).toFixed(2)} s | ${(f / b).toFixed(1)}× | ${(f - 2 * b).toFixed(0)} ms |`,
  );
  rmSync(join(repo, '..'), { recursive: true, force: true });
}

console.log('| runner | bare suite run | `keel fix`, verified | fix / bare | beyond 2 bare runs |');
console.log('|---|---:|---:|---:|---:|');
for (const row of rows) console.log(row);
console.log(
  `\nMedians of ${RUNS} runs per runner, a bare run and a fix interleaved. The model is scripted and answers at once: no real model is measured.`,
);
if (!existsSync(join(root, 'dist'))) console.log('(run `npm run build` first)');
