/**
 * What held paths (src/policy/held-path.ts) cost the file tools: the same read_file, write_file and
 * edit_file calls through this tree's tools and through the tools as they were before, which used the
 * checked path string. Both are bundled alike from source with esbuild (the old one from git: BENCH_BASE,
 * default the parent of the commit that added held-path.ts) and run in this one process, interleaved round
 * by round so background load lands on both. Prints the median microseconds per call and the ratio.
 * BENCH_CALLS (default 200) calls per operation per round, BENCH_ROUNDS (default 15, two more dropped as
 * warm-up). The workspace is on /dev/shm when there is one (BENCH_TMP to choose): on a disk, write_file
 * and edit_file wait for fsync, whose milliseconds drown the microseconds the walk adds.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const WARMUP = 2;

const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
const added = git('log', '--diff-filter=A', '--format=%H', '--', 'src/policy/held-path.ts').split('\n').pop();
const base = git('rev-parse', process.env.BENCH_BASE ?? `${added}^`);
const tmp = process.env.BENCH_TMP ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
const work = realpathSync(mkdtempSync(join(tmp, 'keel-bench-files-')));

/** The three tools and Scope from a source tree, bundled into one ES module and imported. */
async function load(label, srcDir, extra = []) {
  const outfile = join(work, `${label}.mjs`);
  await build({
    stdin: {
      contents: [
        "export { readFileTool } from './tools/read-file.js';",
        "export { writeFileTool } from './tools/write-file.js';",
        "export { editFileTool } from './tools/edit-file.js';",
        "export { Scope } from './policy/scope.js';",
        ...extra,
      ].join('\n'),
      resolveDir: srcDir,
      loader: 'ts',
    },
    // zod and the rest resolve from this project's node_modules, for both trees
    nodePaths: [join(root, 'node_modules')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'error',
  });
  return import(pathToFileURL(outfile).href);
}

const beforeSrc = join(work, 'before');
mkdirSync(beforeSrc);
execFileSync('sh', ['-c', `git archive ${base} src | tar -x -C ${beforeSrc}`], { cwd: root });
const impls = [
  { label: 'before', tools: await load('before', join(beforeSrc, 'src')) },
  {
    label: 'held',
    tools: await load('held', join(root, 'src'), ["export { HeldDir } from './policy/held-path.js';"]),
  },
];

// A workspace like a project's: the files sit a few folders down, which is what the walk pays for
const ws = join(work, 'ws');
const dir = join(ws, 'src', 'lib', 'core');
mkdirSync(dir, { recursive: true });
const lines = Array.from({ length: 200 }, (_, i) => `export const value${i} = ${i}; // a line of code`);
writeFileSync(join(dir, 'read.ts'), `${lines.join('\n')}\n`);
writeFileSync(join(dir, 'edit.ts'), `${lines.join('\n')}\n`);
const depth = dir.split('/').length;

function context(tools) {
  const scope = new tools.Scope({ root: ws, writable: ['.'] });
  return { cwd: ws, signal: new AbortController().signal, resolve: (p, a) => scope.resolve(p, a) };
}

const path = (name) => `src/lib/core/${name}`;
const operations = {
  read_file: (t, ctx) => t.readFileTool.execute({ path: path('read.ts') }, ctx),
  // every other call puts the old line back, so each one changes the file
  edit_file: (t, ctx, i) =>
    t.editFileTool.execute(
      i % 2 === 0
        ? { path: path('edit.ts'), old_string: 'value7 = 7;', new_string: 'value7 = 70;' }
        : { path: path('edit.ts'), old_string: 'value7 = 70;', new_string: 'value7 = 7;' },
      ctx,
    ),
  write_file: (t, ctx, i) => t.writeFileTool.execute({ path: path('write.ts'), content: `${i % 2}\n` }, ctx),
};

/** Wall and CPU (this process, every thread: user + system) microseconds per call of `fn`, over `n` calls. */
async function measure(n, fn) {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  const wall = Number(process.hrtime.bigint() - start) / 1000 / n;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / n };
}

const samples = new Map(); // `${op} ${label}` -> one { wall, cpu } per round
const keep = (key, sample) => samples.set(key, [...(samples.get(key) ?? []), sample]);
for (let round = 0; round < ROUNDS + WARMUP; round++) {
  for (const [op, call] of Object.entries(operations)) {
    // alternate which implementation goes first, so neither always runs on a warmer cache
    const order = round % 2 === 0 ? impls : [...impls].reverse();
    for (const { label, tools } of order) {
      const ctx = context(tools);
      const sample = await measure(CALLS, (i) => call(tools, ctx, i));
      if (round >= WARMUP) keep(`${op} ${label}`, sample);
    }
  }
  // the walk alone, from / to the file's folder: what each use of a path now pays before it opens the file
  const { HeldDir } = impls[1].tools;
  const sample = await measure(CALLS, () => HeldDir.walk(dir).close());
  if (round >= WARMUP) keep('walk', sample);
}
rmSync(work, { recursive: true, force: true });

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const of = (key, field) => median(samples.get(key).map((s) => s[field]));
const cell = (n, width) => n.toFixed(1).padStart(width);
console.log(
  `file tools, held paths vs the path string (${base.slice(0, 12)}): ${CALLS} calls x ${ROUNDS} rounds, the file ${depth - 1} folders below / in ${tmp}`,
);
console.log(
  "medians over the rounds; CPU is this process's user + system time, steadier than wall time on a busy machine",
);
console.log('');
console.log(
  '| tool       | CPU µs before | CPU µs held | CPU ratio | wall µs before | wall µs held | wall ratio |',
);
console.log(
  '| ---------- | ------------- | ----------- | --------- | -------------- | ------------ | ---------- |',
);
for (const op of Object.keys(operations)) {
  const [cb, ch] = [of(`${op} before`, 'cpu'), of(`${op} held`, 'cpu')];
  const [wb, wh] = [of(`${op} before`, 'wall'), of(`${op} held`, 'wall')];
  console.log(
    `| ${op.padEnd(10)} | ${cell(cb, 13)} | ${cell(ch, 11)} | ${(ch / cb).toFixed(2).padStart(9)} | ${cell(wb, 14)} | ${cell(wh, 12)} | ${(wh / wb).toFixed(2).padStart(10)} |`,
  );
}
console.log('');
console.log(
  `the walk alone (${depth - 1} folders, an open and a close each): ${of('walk', 'cpu').toFixed(1)} µs CPU, ${of('walk', 'wall').toFixed(1)} µs wall. read_file walks once; edit_file and write_file twice (to read, then to write)`,
);
