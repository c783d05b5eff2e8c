/** Workflow runs' contract on SQLite and PostgreSQL: starts, deliveries, quorum counting, signals, timers, the sealed chain. */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { verifyRunChain } from '../../src/hub/runs-chain.js';
import { readRun } from '../../src/hub/runs-read.js';
import { type AgentDirectory, RunRefused, RunsStore } from '../../src/hub/runs-store.js';
import { fireDueTimers, startTimerLoop } from '../../src/hub/timers.js';
import { type LoadedWorkflow, parseWorkflow } from '../../src/hub/workflow-file.js';
import type { Store } from '../../src/store/engine.js';
import { storeEngines } from '../helpers/engines.js';

const engines = await storeEngines();

const FLOW = `version: 1
trigger: {source: github, event: pull_request, secret_env: KEEL_WH_GITHUB, signal_secret_env: KEEL_WH_SIGNALS}
stages:
  - {id: review, kind: quorum, eligible: [rev-a, rev-b, rev-c], min_producers: 2, prompt: "Review PR {{pull_request.number}}", timeout: 1h}
  - {id: ci, kind: await_signal, signal: ci-result, timeout: 2h}
  - {id: fix, kind: agent, agent: fixer, mode: edit}
`;

function workflow(name: string, text = FLOW): LoadedWorkflow {
  return {
    name,
    file: `${name}.yaml`,
    sha256: 'f'.repeat(64),
    workflow: parseWorkflow(text, `${name}.yaml`),
  };
}

/** The hub's agent registry as the run sees it: these names are registered, with these ids. */
function directory(registered: Record<string, string>): AgentDirectory {
  return {
    resolve: async (_tx, names) =>
      new Map(
        names.filter((n) => registered[n]).map((n) => [n, registered[n] as string] as [string, string]),
      ),
  };
}

const AGENTS = {
  'rev-a': 'ag-a',
  'rev-b': 'ag-b',
  'rev-c': 'ag-c',
  fixer: 'ag-fix',
  coordinator: 'ag-coord',
};

function clock(start = 1_800_000_000_000) {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

const hex = (n: number) => n.toString(16).padStart(64, '0');

describe.each(engines)('workflow runs on $name', (engine) => {
  let store: Store;
  let other: Store;
  const key = randomBytes(32);
  beforeAll(async () => {
    if (engine.skip) return;
    store = await engine.open();
    other = await engine.open();
  });
  const test = it.skipIf(engine.skip !== '');

  async function requestsOf(runId: string, stage: string, attempt: number) {
    const rows = await store.query<{ message_id: string; agent_id: string; body: string }>(
      'SELECT message_id, agent_id, body FROM hub_stage_requests WHERE run_id = $1 AND stage_id = $2 AND attempt = $3 ORDER BY agent_id',
      [runId, stage, attempt],
    );
    return new Map(rows.map((r) => [r.agent_id, r]));
  }

  test('a run and its first stage are committed with the receipt; a repeated delivery gets it back, another body is a conflict', async () => {
    const runs = new RunsStore(store, { key, agents: directory(AGENTS) });
    const input = {
      workflow: workflow('pr'),
      deliveryId: 'd-1',
      bodySha256: hex(1),
      event: 'pull_request.opened',
      payload: { pull_request: { number: 42 } },
    };
    const receipt = await runs.startRun(input);
    expect(receipt).toMatchObject({ workflow: 'pr', delivery_id: 'd-1', stage: 'review', repeated: false });
    // another connection (another process) sees it at once: committed before the receipt
    const view = await readRun(other, receipt.run_id);
    expect(view?.status).toBe('running');
    expect(view?.stages.map((s) => [s.id, s.state, s.attempt])).toEqual([
      ['review', 'active', 1],
      ['ci', 'pending', 0],
      ['fix', 'pending', 0],
    ]);
    expect(view?.stages[0]?.eligible.map((e) => e.agent_id)).toEqual(['ag-a', 'ag-b', 'ag-c']);
    const requests = await requestsOf(receipt.run_id, 'review', 1);
    expect([...requests.keys()]).toEqual(['ag-a', 'ag-b', 'ag-c']);
    expect(JSON.parse(requests.get('ag-a')?.body ?? '{}')).toMatchObject({
      prompt: 'Review PR 42',
      attempt: 1,
    });
    expect(view?.events.map((e) => e.type)).toEqual(['run_started', 'stage_started']);
    // the body is never kept: only its hash
    expect(JSON.stringify(view)).not.toContain('"number"');

    expect(await runs.startRun(input)).toEqual({ ...receipt, repeated: true });
    await expect(runs.startRun({ ...input, bodySha256: hex(2) })).rejects.toMatchObject({
      status: 409,
      code: 'delivery_id_conflict',
    });
    // the same delivery id to another workflow signed with the same secret is a replay, refused
    await expect(runs.startRun({ ...input, workflow: workflow('pr-other') })).rejects.toMatchObject({
      status: 409,
      code: 'delivery_id_conflict',
    });
    // under another secret it is another sender's delivery
    const elsewhere = await runs.startRun({
      ...input,
      workflow: workflow('jira', FLOW.replace('secret_env: KEEL_WH_GITHUB', 'secret_env: KEEL_WH_JIRA')),
    });
    expect(elsewhere.run_id).not.toBe(receipt.run_id);
    expect(await verifyRunChain(other, key, receipt.run_id)).toEqual({ ok: true, events: 2, problems: [] });
  });

  test('a quorum its registered agents cannot satisfy does not start, and leaves no delivery behind', async () => {
    const few = new RunsStore(store, { key, agents: directory({ 'rev-a': 'ag-a', fixer: 'ag-fix' }) });
    const input = {
      workflow: workflow('pr'),
      deliveryId: 'd-few',
      bodySha256: hex(3),
      event: 'pull_request',
      payload: {},
    };
    const err = await few.startRun(input).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RunRefused);
    expect(err).toMatchObject({ status: 422, code: 'quorum_unsatisfiable' });
    expect((err as Error).message).toContain('rev-b, rev-c not');
    const runs = await store.query('SELECT id FROM hub_runs WHERE delivery_id = $1', ['d-few']);
    expect(runs).toEqual([]);
    // once they register, the same delivery starts the run
    const all = new RunsStore(store, { key, agents: directory(AGENTS) });
    expect((await all.startRun(input)).repeated).toBe(false);
  });

  test('a quorum of 2: one agent cannot satisfy it alone, nor coordinator text, nor a forged reply row', async () => {
    const runs = new RunsStore(store, { key, agents: directory(AGENTS) });
    const { run_id } = await runs.startRun({
      workflow: workflow('pr'),
      deliveryId: 'd-quorum',
      bodySha256: hex(4),
      event: 'pull_request',
      payload: {},
    });
    const req = await requestsOf(run_id, 'review', 1);
    const id = (agent: string) => req.get(agent)?.message_id ?? '';
    expect(
      await runs.recordReply({
        requestMessageId: id('ag-a'),
        agentId: 'ag-a',
        messageId: 'm-a1',
        replyHash: hex(10),
      }),
    ).toEqual({
      counted: true,
      producers: 1,
      stageDone: false,
    });
    // the same agent again: its request is answered; replying to another agent's request is refused
    expect(
      await runs.recordReply({
        requestMessageId: id('ag-a'),
        agentId: 'ag-a',
        messageId: 'm-a2',
        replyHash: hex(11),
      }),
    ).toEqual({
      counted: false,
      reason: 'already_replied',
    });
    expect(
      await runs.recordReply({
        requestMessageId: id('ag-b'),
        agentId: 'ag-a',
        messageId: 'm-a3',
        replyHash: hex(12),
      }),
    ).toEqual({
      counted: false,
      reason: 'not_the_recipient',
    });
    // a coordinator's own text is no reply to a request the hub routed
    expect(
      await runs.recordReply({
        requestMessageId: 'm-coordinator-text',
        agentId: 'ag-coord',
        messageId: 'm-c',
        replyHash: hex(13),
      }),
    ).toEqual({
      counted: false,
      reason: 'not_a_run_request',
    });
    expect(
      await runs.recordReply({
        requestMessageId: id('ag-b'),
        agentId: 'ag-coord',
        messageId: 'm-c2',
        replyHash: hex(14),
      }),
    ).toEqual({
      counted: false,
      reason: 'not_the_recipient',
    });
    // a row written past the reply path (a bug, or someone with the database) for an agent the request did not go to
    await store.run(
      `INSERT INTO hub_stage_replies (request_message_id, message_id, run_id, stage_id, attempt, agent_id, request_hash, reply_hash, received_at)
       VALUES ($1, 'm-forged', $2, 'review', 1, 'ag-coord', $3, $3, 0)`,
      [id('ag-c'), run_id, hex(15)],
    );
    let view = await readRun(store, run_id);
    expect(view?.stages[0]).toMatchObject({ state: 'active', producers: 1 });

    expect(
      await runs.recordReply({
        requestMessageId: id('ag-b'),
        agentId: 'ag-b',
        messageId: 'm-b1',
        replyHash: hex(16),
      }),
    ).toEqual({
      counted: true,
      producers: 2,
      stageDone: true,
    });
    view = await readRun(store, run_id);
    expect(view?.stages.map((s) => s.state)).toEqual(['done', 'parked', 'pending']);
    const done = view?.events.find((e) => e.type === 'stage_done');
    expect(done?.data).toMatchObject({
      stage: 'review',
      attempt: 1,
      evidence: { min_producers: 2, producers: 2 },
    });
    const evidence =
      (done?.data.evidence as { replies: Record<string, string>[] } | undefined)?.replies ?? [];
    expect(evidence.map((r) => [r.agent_id, r.message_id, r.reply_hash])).toEqual([
      ['ag-a', 'm-a1', hex(10)],
      ['ag-b', 'm-b1', hex(16)],
    ]);
    expect(evidence[0]?.request_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(evidence[0]?.request_message_id).toBe(id('ag-a'));
    // ag-c's late answer changes nothing now
    expect(
      await runs.recordReply({
        requestMessageId: id('ag-c'),
        agentId: 'ag-c',
        messageId: 'm-c9',
        replyHash: hex(17),
      }),
    ).toEqual({
      counted: false,
      reason: 'already_replied',
    });
    expect((await verifyRunChain(store, key, run_id))?.ok).toBe(true);
  });

  test('a reply to an earlier attempt does not count for the retry; timers fire once, from any process', async () => {
    const time = clock();
    const runs = new RunsStore(store, { key, agents: directory(AGENTS), now: time.now });
    const elsewhere = new RunsStore(other, { key, agents: directory(AGENTS), now: time.now });
    const { run_id } = await runs.startRun({
      workflow: workflow('pr'),
      deliveryId: 'd-attempts',
      bodySha256: hex(5),
      event: 'pull_request',
      payload: {},
    });
    const first = await requestsOf(run_id, 'review', 1);
    await runs.recordReply({
      requestMessageId: first.get('ag-a')?.message_id ?? '',
      agentId: 'ag-a',
      messageId: 'x-a1',
      replyHash: hex(20),
    });
    time.advance(59 * 60_000);
    expect((await elsewhere.fireTimers()).filter((f) => f.run_id === run_id)).toEqual([]);
    time.advance(60_001);
    const fired = (await elsewhere.fireTimers()).filter((f) => f.run_id === run_id);
    expect(fired.map((f) => f.outcome)).toEqual(['timed_out']);
    expect((await runs.fireTimers()).filter((f) => f.run_id === run_id)).toEqual([]);
    expect((await readRun(store, run_id))?.status).toBe('failed');

    expect(await runs.retryStage(run_id)).toBe(2);
    // ag-b answers the first attempt's request late: it is recorded, and it does not count
    expect(
      await runs.recordReply({
        requestMessageId: first.get('ag-b')?.message_id ?? '',
        agentId: 'ag-b',
        messageId: 'x-b1',
        replyHash: hex(21),
      }),
    ).toEqual({ counted: false, reason: 'stage_not_waiting' });
    const second = await requestsOf(run_id, 'review', 2);
    expect(
      await runs.recordReply({
        requestMessageId: second.get('ag-a')?.message_id ?? '',
        agentId: 'ag-a',
        messageId: 'x-a2',
        replyHash: hex(22),
      }),
    ).toEqual({ counted: true, producers: 1, stageDone: false });
    expect(
      await runs.recordReply({
        requestMessageId: second.get('ag-c')?.message_id ?? '',
        agentId: 'ag-c',
        messageId: 'x-c2',
        replyHash: hex(23),
      }),
    ).toEqual({ counted: true, producers: 2, stageDone: true });
    // the first attempt's timer is gone; the signal stage's own is set
    const timers = await store.query<{ stage_id: string }>(
      'SELECT stage_id FROM hub_timers WHERE run_id = $1',
      [run_id],
    );
    expect(timers).toEqual([{ stage_id: 'ci' }]);
  });

  test('a signal before its stage parks is kept and consumed when it parks; repeats, conflicts and unknown names', async () => {
    const runs = new RunsStore(store, { key, agents: directory(AGENTS) });
    const { run_id } = await runs.startRun({
      workflow: workflow('pr'),
      deliveryId: 'd-signal',
      bodySha256: hex(6),
      event: 'pull_request',
      payload: {},
    });
    const early = await runs.signal({
      runId: run_id,
      name: 'ci-result',
      signalId: 's-1',
      bodySha256: hex(30),
    });
    expect(early).toMatchObject({ ok: true, receipt: { consumed: false, repeated: false } });
    expect(
      await runs.signal({ runId: run_id, name: 'ci-result', signalId: 's-1', bodySha256: hex(30) }),
    ).toMatchObject({
      ok: true,
      receipt: { repeated: true },
    });
    expect(
      await runs.signal({ runId: run_id, name: 'ci-result', signalId: 's-1', bodySha256: hex(31) }),
    ).toMatchObject({
      ok: false,
      status: 409,
      code: 'signal_id_conflict',
    });
    expect(
      await runs.signal({ runId: run_id, name: 'deploy', signalId: 's-2', bodySha256: hex(32) }),
    ).toMatchObject({
      ok: false,
      status: 404,
      code: 'no_such_signal',
    });
    const req = await requestsOf(run_id, 'review', 1);
    for (const agent of ['ag-b', 'ag-c'])
      await runs.recordReply({
        requestMessageId: req.get(agent)?.message_id ?? '',
        agentId: agent,
        messageId: `sig-${agent}`,
        replyHash: hex(33),
      });
    const view = await readRun(store, run_id);
    // the kept signal was consumed as ci parked, so the run went straight on to fix
    expect(view?.stages.map((s) => s.state)).toEqual(['done', 'done', 'active']);
    const ciDone = view?.events.filter((e) => e.type === 'stage_done')[1];
    expect(ciDone?.data).toMatchObject({ stage: 'ci', evidence: { signal_id: 's-1', body_sha256: hex(30) } });
    const fix = await requestsOf(run_id, 'fix', 1);
    expect(JSON.parse(fix.get('ag-fix')?.body ?? '{}')).toMatchObject({ mode: 'edit', kind: 'agent' });
    await runs.recordReply({
      requestMessageId: fix.get('ag-fix')?.message_id ?? '',
      agentId: 'ag-fix',
      messageId: 'fix-1',
      replyHash: hex(34),
    });
    expect((await readRun(store, run_id))?.status).toBe('succeeded');
  });

  test('two processes at once: one run per delivery, one completion per quorum, one firing per timer', async () => {
    const time = clock(1_900_000_000_000);
    const here = new RunsStore(store, { key, agents: directory(AGENTS), now: time.now });
    const there = new RunsStore(other, { key, agents: directory(AGENTS), now: time.now });
    const input = {
      workflow: workflow('pr'),
      deliveryId: 'd-race',
      bodySha256: hex(8),
      event: 'pull_request',
      payload: {},
    };
    const both = await Promise.all([here.startRun(input), there.startRun(input)]);
    expect(both.map((r) => r.repeated).sort()).toEqual([false, true]);
    expect(both[0]?.run_id).toBe(both[1]?.run_id);
    const runId = both[0]?.run_id ?? '';
    const req = await requestsOf(runId, 'review', 1);
    const replies = await Promise.all(
      ['ag-a', 'ag-b', 'ag-c'].map((agent, i) =>
        (i % 2 ? there : here).recordReply({
          requestMessageId: req.get(agent)?.message_id ?? '',
          agentId: agent,
          messageId: `race-${agent}`,
          replyHash: hex(40 + i),
        }),
      ),
    );
    expect(replies.filter((r) => r.counted && r.stageDone)).toHaveLength(1);
    const view = await readRun(store, runId);
    expect(view?.events.filter((e) => e.type === 'stage_done')).toHaveLength(1);
    expect(view?.stages[1]?.state).toBe('parked');
    time.advance(2 * 3_600_000 + 1);
    const fired = await Promise.all([here.fireTimers(), there.fireTimers()]);
    expect(fired.flat().filter((f) => f.run_id === runId && f.outcome === 'timed_out')).toHaveLength(1);
    expect((await readRun(store, runId))?.events.filter((e) => e.type === 'stage_timed_out')).toHaveLength(1);
    expect((await verifyRunChain(store, key, runId))?.ok).toBe(true);
    // a failed run takes no more signals
    expect(
      await here.signal({ runId, name: 'ci-result', signalId: 'late', bodySha256: hex(50) }),
    ).toMatchObject({
      ok: false,
      status: 409,
      code: 'run_not_running',
    });
  });

  test('an approval parks until a person approves or rejects it; the timer loop fails a run whose stage timed out', async () => {
    const time = clock(2_000_000_000_000);
    const runs = new RunsStore(store, { key, agents: directory(AGENTS), now: time.now });
    const text = `version: 1
trigger: {source: generic, event: deploy, secret_env: KEEL_WH_CI}
stages:
  - {id: ship, kind: approval, prompt: "Ship it?", timeout: 1d}
`;
    const start = (id: string) =>
      runs.startRun({
        workflow: workflow('deploy', text),
        deliveryId: id,
        bodySha256: hex(60),
        event: 'deploy',
        payload: {},
      });
    const approved = await start('d-approve');
    await expect(runs.approve(approved.run_id, 'other', 'alice')).rejects.toMatchObject({
      code: 'stage_not_waiting',
    });
    await runs.approve(approved.run_id, 'ship', 'alice');
    const view = await readRun(store, approved.run_id);
    expect(view?.status).toBe('succeeded');
    expect(view?.events.find((e) => e.type === 'stage_done')?.data.evidence).toEqual({
      approved_by: 'alice',
    });
    await expect(runs.approve(approved.run_id, 'ship', 'alice')).rejects.toMatchObject({
      code: 'run_not_running',
    });

    // rejected, with its timer gone: the run ends rejected, the decision sealed with who and why; a keel
    // with another audit key is refused instead of breaking the chain, and nothing decides it after
    const rejected = await start('d-reject');
    const foreign = new RunsStore(store, { key: randomBytes(32), agents: directory(AGENTS), now: time.now });
    await expect(
      foreign.decide({ runId: rejected.run_id, stageId: 'ship', decision: 'approve', by: 'mallory' }),
    ).rejects.toMatchObject({ code: 'foreign_audit_key' });
    await expect(
      runs.decide({
        runId: rejected.run_id,
        stageId: 'ship',
        decision: 'approve',
        by: 'x',
        projectId: 'other',
      }),
    ).rejects.toMatchObject({ status: 404 });
    expect(
      await runs.decide({
        runId: rejected.run_id,
        stageId: 'ship',
        decision: 'reject',
        by: 'bob',
        reason: 'no',
      }),
    ).toMatchObject({ decision: 'reject', by: 'bob', status: 'rejected' });
    const gone = await readRun(store, rejected.run_id);
    expect(gone?.status).toBe('rejected');
    expect(gone?.stages[0]?.state).toBe('rejected');
    expect(gone?.events.find((e) => e.type === 'stage_rejected')?.data).toEqual({
      stage: 'ship',
      attempt: 1,
      decision: 'reject',
      by: 'bob',
      reason: 'no',
    });
    expect((await verifyRunChain(store, key, rejected.run_id))?.ok).toBe(true);
    expect(await store.query('SELECT id FROM hub_timers WHERE run_id = $1', [rejected.run_id])).toEqual([]);
    await expect(runs.approve(rejected.run_id, 'ship', 'alice')).rejects.toMatchObject({
      code: 'run_not_running',
    });

    const waiting = await start('d-timeout');
    time.advance(86_400_000);
    // a process sealing with another key fires nothing of this run: the timer stays for one that holds it
    expect(await fireDueTimers(other, randomBytes(32), time.now())).toEqual([]);
    expect((await readRun(store, waiting.run_id))?.status).toBe('running');
    expect(await store.query('SELECT id FROM hub_timers WHERE run_id = $1', [waiting.run_id])).toHaveLength(
      1,
    );
    // the loop is only a clock: the due row in hub_timers is what fails the run
    const stop = startTimerLoop(other, key, { everyMs: 10, now: time.now });
    await vi.waitFor(async () => expect((await readRun(store, waiting.run_id))?.status).toBe('failed'), {
      timeout: 10_000,
    });
    await stop();
    expect((await readRun(store, waiting.run_id))?.stages[0]?.state).toBe('timed_out');
  });

  test('verify finds an edited, a dropped and an appended event, and a wrong key', async () => {
    const runs = new RunsStore(store, { key, agents: directory(AGENTS) });
    const { run_id } = await runs.startRun({
      workflow: workflow('pr'),
      deliveryId: 'd-chain',
      bodySha256: hex(7),
      event: 'pull_request',
      payload: {},
    });
    expect((await verifyRunChain(store, randomBytes(32), run_id))?.problems.map((p) => p.problem)).toContain(
      'its seal (MAC) does not match',
    );
    await store.run(`UPDATE hub_run_events SET data = $2 WHERE run_id = $1 AND seq = 1`, [
      run_id,
      '{"workflow":"other"}',
    ]);
    const edited = await verifyRunChain(store, key, run_id);
    expect(edited?.ok).toBe(false);
    expect(edited?.problems).toContainEqual({ seq: 1, problem: 'its hash does not match its contents' });
    await store.run(`DELETE FROM hub_run_events WHERE run_id = $1 AND seq = 2`, [run_id]);
    const dropped = await verifyRunChain(store, key, run_id);
    expect(dropped?.problems.some((p) => p.seq === 0 && p.problem.startsWith('the head says 2 events'))).toBe(
      true,
    );
    expect(await verifyRunChain(store, key, 'no-such-run')).toBeUndefined();
  });
});
