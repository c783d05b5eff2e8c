/**
 * Every model call in the team store's ledger, written by the model client as the call ends, and the
 * run's `--cost-cap` held against it before each call: through the real binary, on the scripted OpenAI
 * wire model (which reports usage), on SQLite and on PostgreSQL.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import { fixtureRepo, modelPosts } from '../e2e/fix-harness.js';
import { keel, keelHome, lastSessionEvents, model } from '../e2e/harness.js';
import { Pane } from '../e2e/pane.js';
import { freshPgDatabase, skipReason } from '../helpers/pg.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import { line, TURNS } from './batch-harness.js';

const pgUrl = await freshPgDatabase();
const engines = [
  { name: 'sqlite', skip: '', env: {} as Record<string, string> },
  { name: 'postgres', skip: pgUrl ? '' : skipReason, env: { KEEL_STORE: pgUrl ?? '' } },
];

/** Each call: 1000 prompt tokens at $10/Mtok and 100 completion tokens at $100/Mtok, $0.02 in all. */
const USAGE = { prompt_tokens: 1000, completion_tokens: 100 };
const PER_CALL = 0.02;
const priced = (turns: unknown[]) => (turns as ScriptTurn[]).map((t) => ({ ...t, usage: USAGE }));
const PRICING = '[pricing.test-model]\ninput_per_mtok = 10\noutput_per_mtok = 100\n';
const ISSUE = 'mean() of [2, 4, 6] returns 3, not 4';

interface Call {
  seq: number;
  task_id: string | null;
  session_id: string | null;
  provider: string;
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number | null;
  cost_source: string;
}

/** A home whose user config runs the model on `url`, with a price for test-model. */
function pricedHome(url: string): string {
  return keelHome(`provider = "openai"\nbase_url = "${url}"\nmodel = "test-model"\n${PRICING}`);
}

async function ledgerOf(runId: string, home: string, env: Record<string, string>) {
  const shown = await keel(['ledger', runId, '--json'], { cwd: home, home, env });
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as { totals: { calls: number; cost_usd: number }; calls: Call[] };
}

describe.each(engines)('the ledger of every call on $name', (engine) => {
  it.skipIf(engine.skip)(
    'a plain keel fix leaves one priced row per call; --cost-cap stops before a call once the run reached it; an unpriced model under a cap is refused',
    async () => {
      const env = engine.env;
      // uncapped: every call recorded under the fix's run, with the server's counts and the configured price
      const server = await model(priced(TURNS));
      const home = pricedHome(server.url);
      const repo = fixtureRepo('stats');
      const run = await keel(['fix', '--repo', repo, '--issue', ISSUE, '--json'], {
        cwd: repo,
        home,
        env,
        timeoutMs: 60_000,
      });
      expect(run.code, run.stderr).toBe(0);
      const doc = JSON.parse(run.stdout);
      expect(doc.status).toBe('verified');
      const ledger = await ledgerOf(doc.session_id, home, env);
      expect(modelPosts(server)).toBe(4);
      expect(ledger.calls).toHaveLength(4);
      expect(ledger.calls.map((c) => c.seq)).toEqual([1, 2, 3, 4]);
      for (const c of ledger.calls)
        expect(c).toMatchObject({
          task_id: null,
          provider: 'openai',
          model: 'test-model',
          prompt_tokens: 1000,
          completion_tokens: 100,
          cost_source: 'priced',
        });
      for (const c of ledger.calls) expect(c.cost_usd).toBeCloseTo(PER_CALL, 10);
      // the plan's two calls and the attempt's two, each under its session
      const sessions = ledger.calls.map((c) => c.session_id);
      expect(new Set(sessions).size).toBe(2);
      expect(sessions[0]).toBe(sessions[1]);
      expect(ledger.totals.cost_usd).toBeCloseTo(4 * PER_CALL, 10);
      const shown = await keel(['ledger', doc.session_id], { cwd: home, home, env });
      expect(shown.stdout).toContain(`#4 openai/test-model  1000+100 tokens (0 cached)`);
      expect(shown.stdout).toContain(`$0.0200 priced  session ${sessions[3]}`);

      // capped at $0.05: calls start at $0, $0.02 and $0.04; the fourth would start at $0.06 and is not made
      const capped = await model(priced(TURNS));
      const cappedHome = pricedHome(capped.url);
      const again = fixtureRepo('stats');
      const stopped = await keel(['fix', '--repo', again, '--issue', ISSUE, '--cost-cap', '0.05', '--json'], {
        cwd: again,
        home: cappedHome,
        env,
        timeoutMs: 60_000,
      });
      expect(stopped.code, stopped.stderr).toBe(1);
      const stoppedDoc = JSON.parse(stopped.stdout);
      expect(stoppedDoc).toMatchObject({ code: 'BUDGET_EXCEEDED', budget: 'cost_cap', status: 'failed' });
      expect(stoppedDoc.reason).toContain('has spent $0.0600 of its --cost-cap $0.05');
      expect(modelPosts(capped)).toBe(3);
      const cappedLedger = await ledgerOf(stoppedDoc.session_id, cappedHome, env);
      expect(cappedLedger.totals.calls).toBe(3);
      expect(cappedLedger.totals.cost_usd).toBeCloseTo(3 * PER_CALL, 10);

      // a model the config has no price for: refused before anything starts, the model named
      const blind = await model(priced(TURNS));
      const blindHome = keelHome(`provider = "openai"\nbase_url = "${blind.url}"\nmodel = "free-model"\n`);
      const third = fixtureRepo('stats');
      const refused = await keel(['fix', '--repo', third, '--issue', ISSUE, '--cost-cap', '1', '--json'], {
        cwd: third,
        home: blindHome,
        env,
      });
      expect(refused.code).toBe(2);
      expect(JSON.parse(refused.stdout).error).toContain(
        'model "free-model" has none: add [pricing."free-model"]',
      );
      expect(modelPosts(blind)).toBe(0);
    },
    180_000,
  );

  it.skipIf(engine.skip)(
    'a one-shot session (keel ask, keel review) is a run of its own in the ledger',
    async () => {
      const env = engine.env;
      const server = await model([
        { text: 'four', usage: USAGE },
        { text: '{"verdict": "APPROVE", "findings": []}', usage: USAGE },
      ]);
      const home = pricedHome(server.url);
      const run = await keel(['ask', '--json', 'what is 2 + 2?'], { cwd: home, home, env });
      expect(run.code, run.stderr).toBe(0);
      const id = JSON.parse(run.stdout).session_id as string;
      const ledger = await ledgerOf(id, home, env);
      expect(ledger.calls).toHaveLength(1);
      expect(ledger.calls[0]).toMatchObject({ session_id: id, task_id: null, cost_source: 'priced' });
      const repo = gitRepo({ 'math.js': 'export const add = (a, b) => a - b;\n' });
      writeFileSync(join(repo, 'math.js'), 'export const add = (a, b) => a + b;\n');
      const review = await keel(['review', '--json'], { cwd: repo, home, env });
      expect(review.code, review.stderr).toBe(0);
      const reviewId = JSON.parse(review.stdout).session_id as string;
      expect((await ledgerOf(reviewId, home, env)).calls.map((c) => c.session_id)).toEqual([reviewId]);
      expect(modelPosts(server)).toBe(2);
    },
  );

  it.skipIf(engine.skip)(
    "a batch's rows name its run and task once each; its cost cap stops dispatch and calls, and a resume keeps it",
    async () => {
      const env = engine.env;
      // one task's fix is four calls at $0.02: with a cap of $0.09 the first task ends verified at $0.08,
      // the second makes one call (it starts at $0.08) and is stopped before its next, the third never starts
      const server = await model(priced([...TURNS, ...TURNS, ...TURNS]));
      const home = pricedHome(server.url);
      const dir = tempDir('keel-batch-cap-');
      const file = join(dir, 'tasks.jsonl');
      const repos = [fixtureRepo('stats'), fixtureRepo('stats'), fixtureRepo('stats')];
      writeFileSync(file, repos.map((repo, i) => line({ id: `t${i}`, repo, issue: ISSUE })).join(''));
      const runId = `cap-${engine.name}`;
      const args = ['batch', file, '--concurrency', '1', '--run-id', runId, '--json'];
      const run = await keel([...args, '--cost-cap', '0.09'], { cwd: dir, home, env, timeoutMs: 150_000 });
      expect(run.code, run.stderr).toBe(1);
      const doc = JSON.parse(run.stdout);
      expect(doc).toMatchObject({ end: 'cost_cap', status: 'cost_cap', exit_code: 1, cost_cap_usd: 0.09 });
      expect(doc.counts).toMatchObject({ done: 1, failed: 1, queued: 1, running: 0 });
      const byId = Object.fromEntries(
        (doc.tasks as Array<{ id: string; result: { status?: string } | null }>).map((t) => [t.id, t]),
      );
      expect(byId.t1?.result?.status).toBe('cost_cap');
      expect(byId.t2?.result).toBeNull();
      expect(modelPosts(server)).toBe(5);
      // one row per call the server answered, each under the batch's run and its task: none doubled
      const ledger = await ledgerOf(runId, home, env);
      expect(ledger.calls.map((c) => c.task_id)).toEqual(['t0', 't0', 't0', 't0', 't1']);
      expect(ledger.calls.map((c) => c.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(new Set(ledger.calls.map((c) => c.cost_source))).toEqual(new Set(['priced']));
      expect(ledger.totals.cost_usd).toBeCloseTo(5 * PER_CALL, 10);
      const listed = await keel(['ledger'], { cwd: dir, home, env });
      expect(listed.stdout).toContain(`${runId}  5 calls (2 tasks)  5000+500 tokens  $0.1000`);

      const status = await keel(['batch', 'status', runId], { cwd: dir, home, env });
      expect(status.code).toBe(1);
      expect(status.stdout).toContain('t1  cost_cap');
      expect(status.stdout).toContain('(cost_cap: cost cap reached: $0.1000 spent of $0.09)');
      expect(status.stdout).toContain('· $0.1000 of $0.09 cap');
      const report = await keel(['batch', 'report', runId, '--json'], { cwd: dir, home, env });
      const reportDoc = JSON.parse(report.stdout);
      expect(reportDoc).toMatchObject({ stopped: 'cost_cap', cost_cap_usd: 0.09 });
      expect(reportDoc.tasks.map((t: { verdict: string }) => t.verdict)).toEqual([
        'verified',
        'cost_cap',
        'unfinished',
      ]);

      // a resume holds the stored cap: nothing starts and no call is made
      const resumed = await keel(['batch', 'resume', runId, '--json'], {
        cwd: dir,
        home,
        env,
        timeoutMs: 60_000,
      });
      expect(resumed.code, resumed.stderr).toBe(1);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ end: 'cost_cap', cost_cap_usd: 0.09 });
      const sameId = await keel(args, { cwd: dir, home, env, timeoutMs: 60_000 });
      expect(JSON.parse(sameId.stdout)).toMatchObject({ end: 'cost_cap', counts: { queued: 1 } });
      expect(modelPosts(server)).toBe(5);
      // another cap for the same run is refused rather than silently replacing the one it was started with
      const raised = await keel([...args, '--cost-cap', '5'], { cwd: dir, home, env });
      expect(raised.code).toBe(2);
      expect(JSON.parse(raised.stdout).error).toContain(`run ${runId} was started with --cost-cap 0.09`);

      // a task's model without a price under a cap: the batch is refused before anything is queued
      const unpriced = join(dir, 'unpriced.jsonl');
      writeFileSync(unpriced, line({ id: 'x', repo: repos[2], issue: ISSUE, model: 'free-model' }));
      const blind = await keel(['batch', unpriced, '--cost-cap', '1'], { cwd: dir, home, env });
      expect(blind.code).toBe(2);
      expect(blind.stderr).toContain('task x: --cost-cap $1 needs the price of every model');
      expect(modelPosts(server)).toBe(5);
    },
    240_000,
  );
});

describe('a chat', () => {
  it('records each of its sessions as a run of its own', async () => {
    const server = await model([{ text: 'hello from the chat', usage: USAGE }]);
    const home = pricedHome(server.url);
    const repo = gitRepo();
    const pane = Pane.start(['chat', '--context-window', '32000'], { cwd: repo, home });
    await pane.waitFor(/ctx \d/);
    pane.type('hi', 'Enter');
    await pane.waitFor('hello from the chat');
    // the row is written as the call ends, so it is there once the turn's session has ended
    let events = lastSessionEvents(home);
    for (let i = 0; i < 100 && !events.some((e) => e.type === 'session_end'); i++) {
      await new Promise((r) => setTimeout(r, 100));
      events = lastSessionEvents(home);
    }
    const id = events[0]?.session_id ?? '';
    const ledger = await ledgerOf(id, home, {});
    expect(ledger.calls).toHaveLength(1);
    expect(ledger.calls[0]).toMatchObject({ session_id: id, cost_source: 'priced', prompt_tokens: 1000 });
  });
});

describe('a team store keel cannot reach', () => {
  it('stops keel fix and keel ask before any model call, with exit 3 naming the store', async () => {
    const server = await model(priced(TURNS));
    const home = pricedHome(server.url);
    const repo = fixtureRepo('stats');
    const env = { KEEL_STORE: 'postgres://keel:s3cret@127.0.0.1:1/keel' };
    const fix = await keel(['fix', '--repo', repo, '--issue', ISSUE, '--json'], { cwd: repo, home, env });
    expect(fix.code).toBe(3);
    const error = JSON.parse(fix.stdout).error as string;
    expect(error).toContain('cannot open the team store at postgres://keel:***@127.0.0.1:1/keel');
    expect(error).not.toContain('s3cret');
    const ask = await keel(['ask', 'hi'], { cwd: home, home, env });
    expect(ask.code).toBe(3);
    expect(ask.stderr).toContain('for the ledger of model calls');
    expect(modelPosts(server)).toBe(0);
  });
});
