/** What the shell sandbox costs per command: median wall time through bwrap vs a plain runArgv (build first). */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

// KEEL_DIST=/path/to/other/dist measures another build (an older commit's) on the same machine
const dist = process.env.KEEL_DIST ? pathToFileURL(`${resolve(process.env.KEEL_DIST)}/`).href : '../dist/';
const { commandArgv, runArgv } = await import(`${dist}policy/exec.js`);
const { createSandbox } = await import(`${dist}policy/sandbox.js`);

const RUNS = 30;
const WARMUP = 3;
const COMMANDS = ['true', 'echo hi'];
const LIMITS = { cpu_s: 300, memory_mb: 4096, processes: 256, file_size_mb: 1024, output_kb: 1024 };

const root = realpathSync(mkdtempSync(join(tmpdir(), 'keel-bench-sandbox-')));
const signal = new AbortController().signal;
const base = { root, writable: [root], network: false, limits: LIMITS };

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function timeRuns(run) {
  for (let i = 0; i < WARMUP; i++) await run();
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const start = process.hrtime.bigint();
    const result = await run();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (result.exitCode !== 0) throw new Error(`run failed: ${JSON.stringify(result)}`);
  }
  return median(times);
}

const runners = [['runArgv (no sandbox, no limits)', null]];
const none = await createSandbox({ ...base, kind: 'none' });
runners.push(['sandbox none (limits only)', none]);
let bwrap;
try {
  bwrap = await createSandbox({ ...base, kind: 'bwrap' });
  runners.push(['sandbox bwrap', bwrap]);
} catch (err) {
  console.log(`bwrap unavailable, its rows are skipped: ${err.message}`);
}

const rows = [];
for (const command of COMMANDS) {
  const medians = [];
  for (const [name, sandbox] of runners) {
    const run = sandbox
      ? () => sandbox.run(command, { timeoutS: 30, signal })
      : () =>
          runArgv(commandArgv({ shell: command }), {
            cwd: root,
            timeoutS: 30,
            signal,
            maxOutputBytes: LIMITS.output_kb * 1024,
          });
    medians.push([name, await timeRuns(run)]);
  }
  const plain = medians[0][1];
  for (const [name, ms] of medians) {
    rows.push({ command, runner: name, median_ms: ms.toFixed(2), overhead_ms: (ms - plain).toFixed(2) });
  }
}

console.log(`sandbox overhead: median wall time of ${RUNS} runs each (after ${WARMUP} warm-up runs)`);
console.log(
  `limits in force: ${none
    .describe()
    .replace(/^.*limits: /, '')
    .replace(/; environment.*$/, '')}`,
);
const widths = ['command', 'runner', 'median_ms', 'overhead_ms'].map((key) =>
  Math.max(key.length, ...rows.map((r) => String(r[key]).length)),
);
const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join('  ');
console.log(line(['command', 'runner', 'median_ms', 'overhead_ms']));
for (const r of rows) console.log(line([r.command, r.runner, r.median_ms, r.overhead_ms]));

await none.close();
await bwrap?.close();
rmSync(root, { recursive: true, force: true });
