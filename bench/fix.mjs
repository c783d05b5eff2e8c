// keel fix benchmarks (issue 4): end-to-end wall time of `keel demo`, and the verifier's own overhead
// over bare runs of the same test suite (per-test reporting, log capture, parsing; with and without the
// sandbox), then keel fix per test runner (fix-runners.mjs). Run `npm run build` first. Prints Markdown tables.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSandbox, sandboxEnv } from '../dist/policy/sandbox.js';
import { findSuite } from '../dist/verify/suite.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

// 1. keel demo, end to end (the real pipeline, scripted model)
const demo = [];
for (let i = 0; i < Math.max(3, Math.floor(RUNS / 3)); i++) {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-home-'));
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [join(root, 'bin/keel.js'), 'demo', '--json'], {
    env: { PATH: process.env.PATH, HOME: home, KEEL_HOME: home },
    encoding: 'utf8',
  });
  demo.push(ms(t0));
  if (r.status !== 0) throw new Error(`keel demo failed: ${r.stderr}`);
  rmSync(home, { recursive: true, force: true });
}

// 2. the same suite: bare `npm test`, then through keel's verifier (plain and in bwrap)
const project = join(mkdtempSync(join(tmpdir(), 'keel-bench-demo-')), 'cart');
cpSync(join(root, 'fixtures/demo'), project, { recursive: true });
const reports = mkdtempSync(join(tmpdir(), 'keel-bench-reports-'));
const suite = findSuite(project, reports);
const signal = new AbortController().signal;
const none = await createSandbox({
  kind: 'none',
  root: project,
  writable: [project, reports],
  network: false,
  limits: defaults(),
});
const bwrap = await createSandbox({
  kind: 'bwrap',
  root: project,
  writable: [project, reports],
  network: false,
  limits: defaults(),
});
const bare = [];
const plain = [];
const boxed = [];
for (let i = 0; i < RUNS; i++) {
  let t0 = process.hrtime.bigint();
  // the same environment keel gives commands, so the difference is keel's reporting and nothing else
  spawnSync('/bin/sh', ['-c', 'npm test >/dev/null 2>&1'], {
    cwd: project,
    env: sandboxEnv(process.env, process.env.HOME),
  });
  bare.push(ms(t0));
  t0 = process.hrtime.bigint();
  const a = await suite.run({ signal, exec: (c, o) => none.run(c, o) });
  plain.push(ms(t0));
  t0 = process.hrtime.bigint();
  const b = await suite.run({ signal, exec: (c, o) => bwrap.run(c, o) });
  boxed.push(ms(t0));
  if (a.results.length !== 5 || b.results.length !== 5)
    throw new Error('the verifier did not read 5 results');
}
await none.close();
await bwrap.close();

const b = median(bare);
const row = (name, v, target) => `| ${name} | ${v} | ${target} |`;
console.log('| metric | keel | target |');
console.log('|---|---:|---:|');
console.log(row('`keel demo` end to end, median', `${(median(demo) / 1000).toFixed(2)} s`, '< 10 s'));
console.log(row('bare `npm test` on the demo project, median', `${b.toFixed(0)} ms`, '-'));
console.log(
  row(
    'verifier run, no sandbox (reporter, log, parse)',
    `${median(plain).toFixed(0)} ms (+${((median(plain) / b - 1) * 100).toFixed(1)}%)`,
    '≤ +15%',
  ),
);
console.log(
  row(
    'verifier run in bwrap',
    `${median(boxed).toFixed(0)} ms (+${((median(boxed) / b - 1) * 100).toFixed(1)}%)`,
    '≤ +15%',
  ),
);
console.log(
  `\n${RUNS} runs each, interleaved; ${demo.length} demo runs. The model is scripted; no real model is measured.`,
);

function defaults() {
  return { cpu_s: 300, memory_mb: 4096, processes: 256, file_size_mb: 1024, output_kb: 1024 };
}

// 3. keel fix per runner, over a bare run of the same suite (bench/fix-runners.mjs)
console.log('');
await import('./fix-runners.mjs');
