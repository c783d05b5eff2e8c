// Routing by difficulty (issue 27): two arms of `keel fix` over the same scripted tasks, on the real binary.
// - strong: every call to the strong tier (`--model strong-model`, which turns routing off);
// - adaptive: `[[routing.tiers]]` weak then strong, each call routed by its difficulty score.
// Two scripted OpenAI-compatible servers (startScriptServer) play the models: "weak" solves the easy tasks and
// writes a wrong fix for the hard ones, "strong" solves every task; the weak tier is priced 20x lower. Tokens
// are keel's own estimate of each request and answer (the servers report no usage), so they grow with the
// real request sizes. Prints one Markdown table per arm: success, calls, tokens, cost (means over the runs),
// and one row per task. Run `npm run build` first; BENCH_RUNS sets the repetitions (default 3).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startScriptServer } from '../dist/model/script-server.js';
import { openDb } from '../dist/store/db.js';
import { EventLog } from '../dist/store/event-log.js';
import { runNodeWith } from './spawn-timed.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PRICES = {
  weak: { input_per_mtok: 0.15, output_per_mtok: 0.6 },
  strong: { input_per_mtok: 3, output_per_mtok: 15 },
};
const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'b@x',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'b@x',
};

/**
 * The tasks: one small node --test repository each, with its bug, the right edit and a wrong one. `hard`
 * is the truth the weak model knows (it fails those); the issue text is all keel sees. `sneaky` is hard
 * behind a short issue, so only a failed attempt can tell.
 */
const TASKS = [
  {
    id: 'easy-sum',
    hard: false,
    issue: 'sum([1, 2, 3]) returns 7, expected 6.',
    src: 'export function sum(xs) {\n  return xs.reduce((a, b) => a + b, 1);\n}\n',
    test: "import { sum } from '../src/lib.js';\ntest('sum', () => assert.equal(sum([1, 2, 3]), 6));\n",
    old: 'a + b, 1)',
    right: 'a + b, 0)',
    wrong: 'a + b + 1, 0)',
  },
  {
    id: 'easy-last',
    hard: false,
    issue: 'last([1, 2, 3]) returns 2; it should return 3.',
    src: 'export function last(xs) {\n  return xs[xs.length - 2];\n}\n',
    test: "import { last } from '../src/lib.js';\ntest('last', () => assert.equal(last([1, 2, 3]), 3));\n",
    old: 'xs[xs.length - 2]',
    right: 'xs[xs.length - 1]',
    wrong: 'xs[0]',
  },
  {
    id: 'easy-clamp',
    hard: false,
    issue: 'clamp(5, 0, 3) gives 0; it should give 3.',
    src: 'export function clamp(x, lo, hi) {\n  return Math.min(lo, Math.max(hi, x));\n}\n',
    test: "import { clamp } from '../src/lib.js';\ntest('clamp', () => assert.equal(clamp(5, 0, 3), 3));\n",
    old: 'Math.min(lo, Math.max(hi, x))',
    right: 'Math.max(lo, Math.min(hi, x))',
    wrong: 'Math.max(hi, Math.min(lo, x))',
  },
  {
    id: 'hard-trace',
    hard: true,
    issue: `Exporting a report crashes in src/lib.js when a column is empty; src/report/table.js and lib/format.js pass it on.
\`formatTable\` calls \`median\` through \`summarizeColumns\`, then \`renderRow\` and \`padCell\` throw:

TypeError: Cannot read properties of undefined (reading 'toFixed')
    at median (src/lib.js:3:20)
    at summarizeColumns (src/report/table.js:51:9)
    at renderRow (src/report/table.js:30:5)
    at padCell (src/report/table.js:12:20)
    at formatTable (lib/format.js:8:3)
    at main (bin/report.js:4:1)
Error: export failed
AssertionError: expected median([]) to be 0

Expected: \`median([])\` is 0 and \`median([3, 1, 2])\` is 2, so \`formatTable\` can call \`toFixed(2)\` on it.`,
    src: 'export function median(xs) {\n  const s = [...xs].sort((a, b) => a - b);\n  return s[Math.floor(s.length / 2)];\n}\n',
    test: "import { median } from '../src/lib.js';\ntest('median', () => {\n  assert.equal(median([]), 0);\n  assert.equal(median([3, 1, 2]), 2);\n});\n",
    old: '  return s[Math.floor(s.length / 2)];',
    right: '  return s.length ? s[Math.floor(s.length / 2)] : 0;',
    wrong: '  return s[Math.floor(s.length / 2)] ?? -1;',
  },
  {
    id: 'hard-long',
    hard: true,
    issue: `The \`parseDuration\` helper in src/lib.js mishandles compound durations used by src/scheduler/plan.js,
src/scheduler/retry.js and src/cli/flags.js. \`parseDuration('1h30m')\` returns 1 (hours only) where
\`scheduleRetry\`, \`computeBackoff\` and \`parseFlags\` expect seconds, 5400. Units \`h\`, \`m\` and \`s\` may
appear in any combination, each at most once, in that order; a bare number is seconds. The retry planner's
\`nextAttemptAt\` and \`withJitter\` rely on it, and so does \`formatEta\`. Failing runs print "Error: invalid
duration" from \`validatePlan\` and the cron preview in docs/scheduling.md is wrong too. The same parser
backs src/scheduler/cron.js and the tests in test/scheduler/plan.test.js, which pass only by luck.`,
    src: 'export function parseDuration(text) {\n  return parseInt(text, 10);\n}\n',
    test: "import { parseDuration } from '../src/lib.js';\ntest('parseDuration', () => {\n  assert.equal(parseDuration('1h30m'), 5400);\n  assert.equal(parseDuration('45'), 45);\n});\n",
    old: '  return parseInt(text, 10);',
    right:
      '  const m = /^(?:(\\d+)h)?(?:(\\d+)m)?(?:(\\d+)s?)?$/.exec(text);\n  return m ? (+(m[1] ?? 0)) * 3600 + (+(m[2] ?? 0)) * 60 + (+(m[3] ?? 0)) : NaN;',
    wrong: '  return parseInt(text, 10) * 60;',
  },
  {
    id: 'sneaky',
    hard: true,
    issue: 'isLeapYear(1900) is true; it should be false.',
    src: 'export function isLeapYear(y) {\n  return y % 4 === 0;\n}\n',
    test: "import { isLeapYear } from '../src/lib.js';\ntest('leap', () => {\n  assert.equal(isLeapYear(1900), false);\n  assert.equal(isLeapYear(2000), true);\n  assert.equal(isLeapYear(2024), true);\n});\n",
    old: '  return y % 4 === 0;',
    right: '  return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);',
    wrong: '  return y % 4 === 0 && y % 100 !== 0;',
  },
];

/** The task's repository: package.json, src/lib.js with the bug, test/lib.test.js; committed on main. */
function repoFor(task, base) {
  const dir = join(base, task.id);
  const files = {
    'package.json': JSON.stringify({
      name: task.id,
      private: true,
      type: 'module',
      scripts: { test: 'node --test' },
    }),
    'src/lib.js': task.src,
    'test/lib.test.js': `import assert from 'node:assert/strict';\nimport test from 'node:test';\n${task.test}`,
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  for (const args of [
    ['init', '-q', '-b', 'main'],
    ['add', '-A'],
    ['commit', '-q', '-m', 'initial'],
  ])
    spawnSync('git', args, { cwd: dir, env: gitEnv });
  return dir;
}

/** A model's turns for a task: a plan (read, then the plan), and attempts that each edit once and say so. */
function script(task, solves) {
  const plan = 'Investigate this issue';
  const attempt = 'Fix this issue';
  const edit = (to) => ({
    task: attempt,
    tool_calls: [
      { name: 'edit_file', arguments: { path: 'src/lib.js', old_string: task.old, new_string: to } },
    ],
  });
  const turns = [
    { task: plan, tool_calls: [{ name: 'read_file', arguments: { path: 'src/lib.js' } }] },
    { task: plan, text: '1. Find the bug in src/lib.js.\n2. Fix it.' },
  ];
  for (let i = 0; i < 3; i++)
    turns.push(edit(solves ? task.right : task.wrong), { task: attempt, text: 'Fixed.' });
  return { turns };
}

const price = (p) => `input_per_mtok = ${p.input_per_mtok}\noutput_per_mtok = ${p.output_per_mtok}`;

/** One `keel fix` of `task` in `arm`, on fresh servers and a fresh KEEL_HOME. */
async function fixOnce(task, arm, base) {
  const weak = await startScriptServer(script(task, !task.hard));
  const strong = await startScriptServer(script(task, true));
  const home = mkdtempSync(join(base, 'home-'));
  writeFileSync(
    join(home, 'config.toml'),
    `provider = "openai"\nbase_url = "${strong.url}"\nmax_output_tokens = 1024\n[budgets]\nmax_rounds = 8\n` +
      `[pricing.strong-model]\n${price(PRICES.strong)}\n` +
      `[[routing.tiers]]\nname = "weak"\nmodel = "weak-model"\nbase_url = "${weak.url}"\n${price(PRICES.weak)}\n` +
      `[[routing.tiers]]\nname = "strong"\nmodel = "strong-model"\nbase_url = "${strong.url}"\n${price(PRICES.strong)}\n`,
  );
  const repo = repoFor(task, mkdtempSync(join(base, 'repo-')));
  const args = [
    join(root, 'bin/keel.js'),
    'fix',
    '--repo',
    repo,
    '--json',
    '--issue',
    task.issue,
    '--max-attempts',
    '3',
  ];
  if (arm === 'strong') args.push('--model', 'strong-model');
  const out = await runNodeWith(args, {
    cwd: home,
    env: { PATH: process.env.PATH, HOME: home, KEEL_HOME: home, NO_COLOR: '1', OPENAI_API_KEY: 'x' },
  });
  await Promise.all([weak.close(), strong.close()]);
  let doc;
  try {
    doc = JSON.parse(out.stdout);
  } catch {
    throw new Error(`${task.id} (${arm}): keel fix printed no JSON (exit ${out.status}):\n${out.stderr}`);
  }
  const posts = (s) => s.requests.filter((r) => r.method === 'POST').length;
  return {
    firstScore: firstRoute(home, doc.session_id)?.score,
    verified: doc.status === 'verified',
    calls: doc.rounds,
    weakCalls: posts(weak),
    strongCalls: posts(strong),
    tokens: doc.tokens.total,
    cost: doc.cost_usd ?? Number.NaN,
  };
}

/** The routing decision of a run's first call, from its log (undefined: unrouted). */
function firstRoute(home, runId) {
  const db = openDb(join(home, 'keel.db'));
  try {
    const log = new EventLog(db);
    const [plan] = log.childSessions(runId);
    return plan && log.events(plan.id).find((e) => e.type === 'model_request')?.data.route;
  } finally {
    db.close();
  }
}

const base = mkdtempSync(join(tmpdir(), 'keel-bench-routing-'));
const arms = ['strong', 'adaptive'];
const results = Object.fromEntries(arms.map((a) => [a, Object.fromEntries(TASKS.map((t) => [t.id, []]))]));
try {
  for (let r = 0; r < RUNS; r++)
    for (const task of TASKS)
      for (const arm of arms) results[arm][task.id].push(await fixOnce(task, arm, base));
} finally {
  rmSync(base, { recursive: true, force: true });
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const usd = (x) => `$${x.toFixed(5)}`;
const totals = (arm) => {
  const all = Object.values(results[arm]).flat();
  return {
    success: all.filter((x) => x.verified).length,
    runs: all.length,
    calls: mean(Object.values(results[arm]).map((xs) => mean(xs.map((x) => x.calls)))) * TASKS.length,
    tokens: mean(Object.values(results[arm]).map((xs) => mean(xs.map((x) => x.tokens)))) * TASKS.length,
    cost: mean(Object.values(results[arm]).map((xs) => mean(xs.map((x) => x.cost)))) * TASKS.length,
  };
};
console.log(
  `\nrouting bench: ${TASKS.length} scripted tasks x ${RUNS} runs per arm (sums per pass over the tasks, means over runs)\n`,
);
console.log('| arm | verified | calls | tokens | cost |');
console.log('| --- | ---: | ---: | ---: | ---: |');
for (const arm of arms) {
  const t = totals(arm);
  console.log(
    `| ${arm} | ${t.success}/${t.runs} | ${t.calls.toFixed(1)} | ${Math.round(t.tokens)} | ${usd(t.cost)} |`,
  );
}
console.log('\n| task | truth | first score | arm | verified | calls (weak/strong) | tokens | cost |');
console.log('| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |');
for (const task of TASKS)
  for (const arm of arms) {
    const xs = results[arm][task.id];
    const split = `${mean(xs.map((x) => x.weakCalls)).toFixed(1)}/${mean(xs.map((x) => x.strongCalls)).toFixed(1)}`;
    console.log(
      `| ${task.id} | ${task.hard ? 'hard' : 'easy'} | ${arm === 'adaptive' ? xs[0].firstScore : '-'} | ${arm} | ${xs.filter((x) => x.verified).length}/${xs.length} | ${mean(xs.map((x) => x.calls)).toFixed(1)} (${split}) | ${Math.round(mean(xs.map((x) => x.tokens)))} | ${usd(mean(xs.map((x) => x.cost)))} |`,
    );
  }
