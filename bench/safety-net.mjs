/**
 * What the safety net's first snapshot costs: SafetyNet.beforeWrite on a 10,000-file repository with some
 * uncommitted work (build first). KEEL_DIST=/path/to/dist measures another build (an older one, to compare).
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const FILES = Number(process.env.FILES ?? 10_000);
const UNTRACKED = 200;
const RUNS = Number(process.env.RUNS ?? 7);
const dist = resolve(process.env.KEEL_DIST ?? new URL('../dist', import.meta.url).pathname);
const { SafetyNet } = await import(pathToFileURL(join(dist, 'policy/safety-net.js')).href);

const env = {
  PATH: process.env.PATH,
  HOME: tmpdir(),
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@example.com',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@example.com',
};
const git = (cwd, ...args) => execFileSync('git', args, { cwd, env, encoding: 'utf8', maxBuffer: 1 << 28 });

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const work = realpathSync(mkdtempSync(join(tmpdir(), 'keel-bench-net-')));
const repo = join(work, 'repo');
const undoDir = join(work, 'undo');
try {
  // 100 folders of files about the size of source files, committed, then a user's uncommitted work
  for (let i = 0; i < FILES; i++) {
    const dir = join(repo, 'src', `m${String(i % 100).padStart(2, '0')}`);
    if (i < 100) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${i}.ts`), `export const v${i} = ${i};\n${'// filler line\n'.repeat(40)}`);
  }
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'initial');
  for (let i = 0; i < 50; i++)
    appendFileSync(join(repo, 'src', `m${String(i % 100).padStart(2, '0')}`, `f${i}.ts`), '// edited\n');
  mkdirSync(join(repo, 'scratch'));
  for (let i = 0; i < UNTRACKED; i++) writeFileSync(join(repo, 'scratch', `u${i}.txt`), `untracked ${i}\n`);
  // the user's index is fresh, as after any `git status`
  git(repo, 'status', '--porcelain');

  const times = [];
  for (let run = 0; run < RUNS; run++) {
    const net = new SafetyNet({ root: repo, sessionId: `bench-${run}`, undoDir });
    const start = process.hrtime.bigint();
    const records = net.beforeWrite([join(repo, 'src/m00/f0.ts')]);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (!records.some((r) => r.kind === 'git'))
      throw new Error(`no snapshot taken: ${JSON.stringify(records)}`);
  }
  console.log(`| files | untracked | runs | first snapshot median | min | max | dist |`);
  console.log(`| ----- | --------- | ---- | --------------------- | --- | --- | ---- |`);
  const ms = (v) => `${v.toFixed(0)} ms`;
  console.log(
    `| ${FILES} | ${UNTRACKED} | ${RUNS} | ${ms(median(times))} | ${ms(Math.min(...times))} | ${ms(Math.max(...times))} | ${dist} |`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
