/** Routing by difficulty through the real binary: two scripted servers as tiers, keel fix and keel batch. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ScriptServer } from '../../src/model/script-server.js';
import { openDb } from '../../src/store/db.js';
import { EventLog, type StoredEvent } from '../../src/store/event-log.js';
import { git, tempDir } from '../helpers/tmp.js';
import { editTurns, fingerprint, fixtureRepo, planTurns } from './fix-harness.js';
import { keel, keelHome, model } from './harness.js';

const BUGGY = '  return sum(values) / (values.length + 1);';
const PLAN = planTurns('src/stats.js', '1. mean divides by one too many.\n2. Divide by values.length.');
const RIGHT = editTurns(
  'src/stats.js',
  BUGGY,
  '  return sum(values) / values.length;',
  'Divides by the length.',
);
const WRONG = editTurns('src/stats.js', BUGGY, '  return sum(values) / (values.length - 1);', 'Fixed!');
const EASY = 'mean() of [2, 4, 6] returns 3, not 4';
const HARD = `mean() is wrong and the report crashes: src/stats.js, src/report/table.js and lib/format.js disagree.
\`formatTable\` calls \`mean\` through \`summarizeColumns\`, then \`renderRow\` and \`padCell\` throw:

TypeError: Cannot read properties of undefined (reading 'toFixed')
    at padCell (src/report/table.js:12:20)
    at renderRow (src/report/table.js:30:5)
    at summarizeColumns (src/report/table.js:51:9)
    at formatTable (lib/format.js:8:3)
    at main (bin/report.js:4:1)
    at node:internal/main/run_main_module:23:47
AssertionError: expected 4, got 3
Error: report failed

Expected: \`mean([2, 4, 6])\` is 4 and \`formatTable\` prints every column with \`toFixed(2)\`.`;

/** A KEEL_HOME whose config routes between two servers: cheap first, then strong, each with its own key variable. */
function tieredHome(
  cheap: ScriptServer,
  strong: ScriptServer,
  top = 'http://127.0.0.1:9/v1',
  strongPrice = 'input_per_mtok = 3\noutput_per_mtok = 15',
): string {
  return keelHome(`provider = "openai"
base_url = "${top}"

[[routing.tiers]]
name = "cheap"
model = "cheap-model"
base_url = "${cheap.url}"
api_key_env = "CHEAP_KEY"
input_per_mtok = 0.1
output_per_mtok = 0.4

[[routing.tiers]]
name = "strong"
model = "strong-model"
base_url = "${strong.url}"
api_key_env = "STRONG_KEY"
${strongPrice}
`);
}

const KEYS = { CHEAP_KEY: 'cheap-secret', STRONG_KEY: 'strong-secret' };

/** Every event of a run and its sessions, as the log keeps them. */
function runEvents(home: string, runId: string): StoredEvent[] {
  const db = openDb(join(home, 'keel.db'));
  try {
    const log = new EventLog(db);
    const out: StoredEvent[] = [];
    const visit = (id: string) => {
      out.push(...log.events(id));
      for (const child of log.childSessions(id)) visit(child.id);
    };
    visit(runId);
    return out;
  } finally {
    db.close();
  }
}

type Route = {
  tier: string;
  provider: string;
  score: number;
  signals: Record<string, number>;
  reason: string;
};
const routes = (events: StoredEvent[]) =>
  events.filter((e) => e.type === 'model_request').map((e) => e.data.route as Route | undefined);

async function fixRun(home: string, repo: string, issue: string, args: string[] = []) {
  const before = fingerprint(repo);
  const run = await keel(['fix', '--repo', repo, '--json', '--issue', issue, ...args], {
    cwd: home,
    home,
    env: KEYS,
    timeoutMs: 40_000,
  });
  expect(fingerprint(repo)).toEqual(before);
  const doc = JSON.parse(run.stdout) as {
    session_id: string;
    status: string;
    attempts: number;
    code: string;
  };
  return { run, doc, events: runEvents(home, doc.session_id) };
}

describe('keel fix routes each call by difficulty', () => {
  it('an easy issue goes to the cheap tier, at its price; every request records its tier, score, signals and reason', async () => {
    const cheap = await model([...PLAN, ...RIGHT]);
    const strong = await model([{ text: 'never' }]);
    const home = tieredHome(cheap, strong);
    const { run, doc, events } = await fixRun(home, fixtureRepo('stats'), EASY);
    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified', attempts: 1 });
    expect(strong.requests).toHaveLength(0);
    expect(cheap.requests.filter((r) => r.method === 'POST').map((r) => r.headers.authorization)).toEqual(
      Array(4).fill('Bearer cheap-secret'),
    );
    const routed = routes(events);
    expect(routed).toHaveLength(4);
    for (const route of routed) {
      expect(route).toMatchObject({ tier: 'cheap', provider: 'openai' });
      expect(route?.score).toBeLessThan(0.5);
      expect(route?.signals).toMatchObject({ failed_attempts: 0, stack_frames: 0 });
      expect(route?.reason).toMatch(/^score [\d.]+ in \[0, 0\.5\): tier cheap; issue /);
    }
    // turns spent are read from the log: each call counts the answers before it
    expect(routed.map((r) => r?.signals.turns)).toEqual([0, 1, 2, 3]);
    const setup = events.find((e) => e.type === 'fix_routing');
    expect(setup?.data).toMatchObject({ thresholds: [0.5], thresholds_from: 'default' });
    // priced at the tier's price: 0.1 / 0.4 USD per million tokens
    const answers = events.filter((e) => e.type === 'assistant_message');
    expect(answers).toHaveLength(4);
    for (const answer of answers) {
      const usage = answer.data.usage as { input: number; output: number };
      expect(answer.data.model).toBe('cheap-model');
      expect(answer.data.cost_usd).toBeCloseTo((usage.input * 0.1 + usage.output * 0.4) / 1e6, 12);
    }
  });

  it('a hard issue (a stack trace, paths, symbols) goes to the strong tier from its first call', async () => {
    const cheap = await model([{ text: 'never' }]);
    const strong = await model([...PLAN, ...RIGHT]);
    // the strong tier runs on your own GPU here: priced by the second
    const home = tieredHome(cheap, strong, undefined, 'gpu_second = 0.01');
    const { run, events } = await fixRun(home, fixtureRepo('stats'), HARD);
    expect(run.code, run.stderr).toBe(0);
    // the cheapest tier is asked its context window (a GET), never a chat
    expect(cheap.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
    const first = routes(events)[0];
    expect(first).toMatchObject({ tier: 'strong', signals: { stack_frames: 6, turns: 0 } });
    expect(first?.reason).toMatch(/^score [\d.]+ >= 0\.5: tier strong; issue [\d.]+ \(.*6 stack frames/);
    for (const answer of events.filter((e) => e.type === 'assistant_message')) {
      const timing = answer.data.timing as { total_ms: number };
      expect(answer.data.cost_usd).toBeCloseTo((timing.total_ms / 1000) * 0.01, 12);
    }
  });

  it('a failing first attempt on the cheap tier escalates the next attempt to the strong tier', async () => {
    const cheap = await model([...PLAN, ...WRONG]);
    const strong = await model([...RIGHT]);
    const home = tieredHome(cheap, strong);
    const { run, doc, events } = await fixRun(home, fixtureRepo('stats'), EASY);
    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified', attempts: 2 });
    expect(routes(events).map((r) => r?.tier)).toEqual([
      'cheap',
      'cheap',
      'cheap',
      'cheap',
      'strong',
      'strong',
    ]);
    const escalated = routes(events)[4];
    expect(escalated?.signals).toMatchObject({ failed_attempts: 1, failing_tests: 1 });
    expect(escalated?.reason).toContain('1 failed attempt');
    expect(strong.requests.filter((r) => r.method === 'POST').map((r) => r.headers.authorization)).toEqual([
      'Bearer strong-secret',
      'Bearer strong-secret',
    ]);
  });

  it('--model wins: no routing, the named model on the top-level endpoint, nothing sent to a tier', async () => {
    const cheap = await model([{ text: 'never' }]);
    const strong = await model([{ text: 'never' }]);
    const solo = await model([...PLAN, ...RIGHT]);
    const home = tieredHome(cheap, strong);
    const { run, events } = await fixRun(home, fixtureRepo('stats'), HARD, [
      '--model',
      'solo-model',
      '--base-url',
      solo.url,
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(cheap.requests).toHaveLength(0);
    expect(strong.requests).toHaveLength(0);
    expect(routes(events).every((r) => r === undefined)).toBe(true);
    expect(events.some((e) => e.type === 'fix_routing')).toBe(false);
    expect(events.filter((e) => e.type === 'model_request').map((e) => e.data.model)).toEqual(
      Array(4).fill('solo-model'),
    );
  });
});

describe('keel batch routes its tasks, and a task that names its model is not routed', () => {
  it('the routed task goes to the cheap tier; the task with `model` goes to that model alone', async () => {
    const cheap = await model([...PLAN, ...RIGHT]);
    const strong = await model([{ text: 'never' }]);
    const top = await model([...PLAN, ...RIGHT]);
    // the top-level endpoint is where a task's own model goes
    const home = tieredHome(cheap, strong, top.url);
    const dir = tempDir('keel-batch-');
    const [routed, named] = [fixtureRepo('stats'), fixtureRepo('stats')];
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(
      file,
      [
        { id: 'routed', repo: routed, issue: EASY },
        { id: 'named', repo: named, issue: EASY, model: 'top-model' },
      ]
        .map((t) => `${JSON.stringify(t)}\n`)
        .join(''),
    );
    const run = await keel(['batch', file, '--concurrency', '1', '--run-id', 'route-1', '--json'], {
      cwd: dir,
      home,
      env: KEYS,
      timeoutMs: 120_000,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(strong.requests).toHaveLength(0);
    expect(cheap.requests.filter((r) => r.method === 'POST')).toHaveLength(4);
    expect(
      top.requests.filter((r) => r.method === 'POST').map((r) => (r.body as { model: string }).model),
    ).toEqual(Array(4).fill('top-model'));
    for (const repo of [routed, named]) expect(git(repo, 'branch', '--list', 'keel/*')).not.toBe('');
  });
});

/** Every turn with the token counts its server reports, so a call's cost is `priced`, not estimated. */
const counted = (turns: typeof PLAN, prompt: number, completion: number) =>
  turns.map((t) => ({ ...t, usage: { prompt_tokens: prompt, completion_tokens: completion } }));

type LedgerCall = {
  tier: string | null;
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number | null;
  cost_source: string;
};

describe("the ledger prices a routed call at its tier's own price", () => {
  it('keel fix on two tiers and no [pricing]: `keel ledger RUN --json` shows each call at tokens × its tier price, priced', async () => {
    const cheap = await model(counted([...PLAN, ...WRONG], 1000, 100));
    const strong = await model(counted(RIGHT, 2000, 300));
    const home = tieredHome(cheap, strong);
    const { run, doc } = await fixRun(home, fixtureRepo('stats'), EASY);
    expect(run.code, run.stderr).toBe(0);
    const shown = await keel(['ledger', doc.session_id, '--json'], { cwd: home, home });
    expect(shown.code, shown.stderr).toBe(0);
    const calls = (JSON.parse(shown.stdout) as { calls: LedgerCall[] }).calls;
    expect(calls.map((c) => [c.tier, c.model, c.cost_source])).toEqual([
      ...Array(4).fill(['cheap', 'cheap-model', 'priced']),
      ...Array(2).fill(['strong', 'strong-model', 'priced']),
    ]);
    for (const c of calls) {
      const [input, output] = c.tier === 'cheap' ? [0.1, 0.4] : [3, 15];
      expect(c.cost_usd).toBeCloseTo((c.prompt_tokens * input + c.completion_tokens * output) / 1e6, 12);
    }
    expect(calls.map((c) => c.prompt_tokens)).toEqual([1000, 1000, 1000, 1000, 2000, 2000]);
    // the run's total is what its calls cost, not $0
    const totals = await keel(['ledger', '--json'], { cwd: home, home });
    const mine = (JSON.parse(totals.stdout) as { runs: { run_id: string; cost_usd: number }[] }).runs.find(
      (r) => r.run_id === doc.session_id,
    );
    expect(mine?.cost_usd).toBeCloseTo((4 * (100 + 40) + 2 * (6000 + 4500)) / 1e6, 12);
  });

  it("two tiers on one model at different prices: the session's cost counts each call at its own tier's price, as the ledger does", async () => {
    const cheap = await model(counted([...PLAN, ...WRONG], 1000, 100));
    const strong = await model(counted(RIGHT, 2000, 300));
    // the same model name behind both tiers (a small and a large GPU, say): a price by model name is one of them
    const home = keelHome(`provider = "openai"
base_url = "http://127.0.0.1:9/v1"

[[routing.tiers]]
name = "cheap"
model = "shared-model"
base_url = "${cheap.url}"
api_key_env = "CHEAP_KEY"
input_per_mtok = 0.1
output_per_mtok = 0.4

[[routing.tiers]]
name = "strong"
model = "shared-model"
base_url = "${strong.url}"
api_key_env = "STRONG_KEY"
input_per_mtok = 3
output_per_mtok = 15
`);
    const { run, doc, events } = await fixRun(home, fixtureRepo('stats'), EASY);
    expect(run.code, run.stderr).toBe(0);
    const tiers = routes(events).map((r) => r?.tier);
    expect(tiers).toEqual(['cheap', 'cheap', 'cheap', 'cheap', 'strong', 'strong']);
    const answers = events.filter((e) => e.type === 'assistant_message');
    const expected = [
      ...Array(4).fill((1000 * 0.1 + 100 * 0.4) / 1e6),
      ...Array(2).fill((2000 * 3 + 300 * 15) / 1e6),
    ];
    for (const [i, answer] of answers.entries()) expect(answer.data.cost_usd).toBeCloseTo(expected[i], 12);
    // and the session's account agrees with the ledger's, call by call
    const shown = await keel(['ledger', doc.session_id, '--json'], { cwd: home, home });
    const calls = (JSON.parse(shown.stdout) as { calls: LedgerCall[] }).calls;
    expect(calls.map((c) => c.cost_usd)).toEqual(answers.map((a) => a.data.cost_usd));
  });

  it('keel batch --cost-cap with tier prices only stops new calls once the cap is reached', async () => {
    // one call on the cheap tier costs $0.14 (1000 × $100 + 100 × $400 per million): the cap of $0.10 is passed after it
    const cheap = await model(counted([...PLAN, ...RIGHT, ...PLAN, ...RIGHT], 1000, 100));
    const strong = await model([{ text: 'never' }]);
    const home = keelHome(`provider = "openai"
base_url = "http://127.0.0.1:9/v1"

[[routing.tiers]]
name = "cheap"
model = "cheap-model"
base_url = "${cheap.url}"
api_key_env = "CHEAP_KEY"
input_per_mtok = 100
output_per_mtok = 400

[[routing.tiers]]
name = "strong"
model = "strong-model"
base_url = "${strong.url}"
api_key_env = "STRONG_KEY"
input_per_mtok = 300
output_per_mtok = 1500
`);
    const dir = tempDir('keel-batch-cap-');
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(
      file,
      ['one', 'two']
        .map((id) => `${JSON.stringify({ id, repo: fixtureRepo('stats'), issue: EASY })}\n`)
        .join(''),
    );
    const run = await keel(
      ['batch', file, '--concurrency', '1', '--run-id', 'cap-tiers', '--cost-cap', '0.1', '--json'],
      { cwd: dir, home, env: KEYS, timeoutMs: 120_000 },
    );
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'cost_cap' });
    // the first call reached the cap: no second call was made, by that task or the next
    expect(cheap.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(strong.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
    const shown = await keel(['ledger', 'cap-tiers', '--json'], { cwd: dir, home });
    const calls = (JSON.parse(shown.stdout) as { calls: LedgerCall[] }).calls;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ tier: 'cheap', cost_source: 'priced' });
    expect(calls[0]?.cost_usd).toBeCloseTo(0.14, 12);
  });
});
