/**
 * Where keel's startup goes: import cost of each dependency alone, and of each stage the CLI loads, in
 * the order it loads them. Every number comes from fresh processes (median); build first.
 * Run: node bench/startup.mjs
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const RUNS = 7;
const SELF = fileURLToPath(import.meta.url);

/** Dependencies keel imports, alone (a shared dependency is charged to each that pulls it in). */
const ALONE = [
  'commander',
  'zod',
  'openai',
  'better-sqlite3',
  'smol-toml',
  'ignore',
  'picomatch',
  'gpt-tokenizer/encoding/o200k_base',
];

/** What `keel ask` imports, in order; each row is what that step adds to the ones before it. */
const STAGES = [
  ['bin → cli/main.js (commander)', '../dist/cli/main.js'],
  ['cli/session-command.js (config: zod, smol-toml)', '../dist/cli/session-command.js'],
  ['agent/session.js (loop, tools, store, policy)', '../dist/agent/session.js'],
  ['openai SDK (loaded on the first request)', 'openai'],
];

if (process.argv[2] === '--child') {
  const out = [];
  for (const spec of process.argv.slice(3)) {
    const t0 = performance.now();
    await import(spec);
    out.push(performance.now() - t0);
  }
  process.stdout.write(JSON.stringify({ ms: out }));
} else {
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const child = (specs) => {
    const r = spawnSync(process.execPath, [SELF, '--child', ...specs], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`import of ${specs.join(', ')} failed:\n${r.stderr}`);
    return JSON.parse(r.stdout).ms;
  };
  const rows = [];
  for (const spec of ALONE) {
    const runs = Array.from({ length: RUNS }, () => child([spec])[0] ?? Number.NaN);
    rows.push([`\`${spec}\` alone`, median(runs)]);
  }
  const staged = Array.from({ length: RUNS }, () => child(STAGES.map(([, spec]) => spec)));
  STAGES.forEach(([name], i) => {
    rows.push([`+ ${name}`, median(staged.map((ms) => ms[i] ?? Number.NaN))]);
  });
  rows.push(['= all of the above, in CLI order', median(staged.map((ms) => ms.reduce((a, b) => a + b, 0)))]);
  const lines = ['| import | ms (median of fresh processes) |', '| --- | ---: |'];
  for (const [name, ms] of rows) lines.push(`| ${name} | ${ms.toFixed(1)} |`);
  process.stdout.write(`${lines.join('\n')}\n`);
}
