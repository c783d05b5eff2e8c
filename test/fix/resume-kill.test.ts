/**
 * The proof that a killed fix resumes without redoing an effect (issue 27): one small scripted fix is
 * killed (SIGKILL, through the KEEL_FAULT_KILL_AFTER_EVENT test hook) right after each of its events in
 * turn, then resumed with `--resume-run`, as a batch worker's next attempt does. Every resumed run must
 * end with the uninterrupted run's diff, verdict and ledger (a re-issued call counted once), with no
 * write applied twice: the shell command appends a line to a file, which a second run would double.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { type KeelRun, keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { git } from '../helpers/tmp.js';

const ISSUE = 'mean() of [2, 4, 6] returns 3, not 4';
const BUGGY = '  return sum(values) / (values.length + 1);';
// each answer reports its own usage, so the ledgers of runs in different temporary folders compare exactly
const TURNS: ScriptTurn[] = [
  { text: '1. mean divides by one too many.\n2. Divide by values.length.' },
  { tool_calls: [{ name: 'read_file', arguments: { path: 'src/stats.js' } }] },
  {
    tool_calls: [
      {
        name: 'edit_file',
        arguments: {
          path: 'src/stats.js',
          old_string: BUGGY,
          new_string: '  return sum(values) / values.length;',
        },
      },
    ],
  },
  { tool_calls: [{ name: 'shell', arguments: { command: "printf 'ran\\n' >> NOTES.txt" } }] },
  { text: 'mean now divides by the length.' },
].map((turn, i) => ({ ...turn, usage: { prompt_tokens: 100 * (i + 1), completion_tokens: i + 1 } }));

interface Outcome {
  doc: Record<string, unknown>;
  diff: string;
  notes: string;
  ledger: Array<Record<string, unknown>>;
  reissued: number;
  /** Calls with more than one result in the log (an effect settled twice). */
  doubled: string[];
  events: number;
  /** Where each fix_verdict is in the run's order of events (its place counted from 1). */
  verdictsAt: number[];
}

/** The fix's diff, verdict, ledger and effect counts, as the run left them. */
function outcomeOf(repo: string, home: string, runId: string, run: KeelRun): Outcome {
  const doc = JSON.parse(run.stdout);
  const branch = String(doc.branch);
  const db = openDb(join(home, 'keel.db'));
  try {
    const log = new EventLog(db);
    const sessions = new Map<string, number>();
    // the ledger the model client wrote as each call ended (the fix's own run: no batch around it)
    const entries = db
      .prepare(
        'SELECT session_id, model, prompt_tokens, completion_tokens, cost_source, reissued FROM ledger WHERE run_id = ? ORDER BY seq',
      )
      .all(runId) as Array<{
      session_id: string | null;
      model: string;
      prompt_tokens: number;
      completion_tokens: number;
      cost_source: string;
      reissued: number;
    }>;
    const ledger = entries.map((e) => {
      if (!sessions.has(e.session_id ?? '')) sessions.set(e.session_id ?? '', sessions.size);
      return {
        session: sessions.get(e.session_id ?? ''),
        model: e.model,
        prompt: e.prompt_tokens,
        completion: e.completion_tokens,
        cost: e.cost_source,
      };
    });
    const results = new Map<string, number>();
    const own = log.events(runId);
    let events = own.length;
    const times: string[] = own.map((e) => e.ts);
    for (const child of log.childSessions(runId)) {
      const all = log.events(child.id);
      events += all.length;
      times.push(...all.map((e) => e.ts));
      for (const e of all.filter((e) => e.type === 'tool_result')) {
        const key = `${child.id}/${e.data.call_id}`;
        results.set(key, (results.get(key) ?? 0) + 1);
      }
    }
    return {
      // the verdict and the spend (carried over from the killed run, not counted again)
      doc: {
        status: doc.status,
        code: doc.code,
        verification: doc.verification,
        files_changed: doc.files_changed,
        attempts: doc.attempts,
        rounds: doc.rounds,
        tokens: doc.tokens,
        cost_usd: doc.cost_usd,
      },
      diff: git(repo, 'diff', 'main', branch),
      notes: gitOr(repo, 'show', `${branch}:NOTES.txt`),
      ledger,
      reissued: entries.filter((e) => e.reissued === 1).length,
      doubled: [...results].filter(([, n]) => n > 1).map(([k]) => k),
      events,
      verdictsAt: own
        .filter((e) => e.type === 'fix_verdict')
        .map((v) => times.filter((t) => t <= v.ts).length),
    };
  } finally {
    db.close();
  }
}

/** One fix of a fresh copy of the fixture, killed after its `killAt`th event and resumed (none: run through). */
async function fixKilledAt(
  killAt: number | undefined,
  n: number,
  turns: ScriptTurn[] = TURNS,
): Promise<Outcome & { killed: boolean; requests: number }> {
  const repo = fixtureRepo('stats');
  const home = keelHome();
  const server = await model(turns);
  const runId = `20261205-000000-${n.toString(16).padStart(6, '0')}`;
  const args = ['fix', '--repo', repo, '--issue', ISSUE, '--json', ...modelFlags(server)];
  const first = await keel(args, {
    cwd: home,
    home,
    env: {
      KEEL_BATCH_FIX_RUN_ID: runId,
      ...(killAt === undefined ? {} : { KEEL_FAULT_KILL_AFTER_EVENT: String(killAt) }),
    },
    timeoutMs: 60_000,
  });
  // what the model server heard, over both processes: a call made twice would show here
  const asked = () => server.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
  if (killAt === undefined)
    return { ...outcomeOf(repo, home, runId, first), killed: false, requests: asked() };
  expect(first.signal, `${first.stdout}\n${first.stderr}`).toBe('SIGKILL');
  const resumed = await keel([...args, '--resume-run', runId], { cwd: home, home, timeoutMs: 60_000 });
  expect(resumed.code, `killed after event ${killAt}: ${resumed.stdout}\n${resumed.stderr}`).toBe(0);
  return { ...outcomeOf(repo, home, runId, resumed), killed: true, requests: asked() };
}

/** A git command's output, or '' when it fails (a file the branch does not hold). */
function gitOr(repo: string, ...args: string[]): string {
  try {
    return git(repo, ...args);
  } catch {
    return '';
  }
}

/** Run `work` over `items`, at most `limit` at once. */
async function pool<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await work(items[i] as T);
  };
  await Promise.all(Array.from({ length: limit }, lane));
  return out;
}

describe('keel fix --resume-run', () => {
  it('a fix killed after any one of its events resumes to the same diff, verdict and ledger, with no effect twice', async () => {
    const reference = await fixKilledAt(undefined, 0);
    expect(reference.doc.status).toBe('verified');
    expect(reference.notes).toBe('ran\n');
    expect(reference.doubled).toEqual([]);
    const boundaries = Array.from({ length: reference.events }, (_, i) => i + 1);
    const runs = await pool(boundaries, 3, (at) => fixKilledAt(at, at));
    for (const [i, run] of runs.entries()) {
      const at = `killed after event ${i + 1} of ${reference.events}`;
      expect(run.killed, at).toBe(true);
      expect(run.doc, at).toEqual(reference.doc);
      expect(run.diff, at).toBe(reference.diff);
      expect(run.notes, at).toBe('ran\n');
      expect(run.ledger, at).toEqual(reference.ledger);
      expect(run.doubled, at).toEqual([]);
      expect(run.reissued, at).toBeLessThanOrEqual(1);
      // the model is asked exactly as often as in the uninterrupted run (a re-issued request was never sent)
      expect(run.requests, at).toBe(reference.requests);
    }
    // a kill between a request's log line and its answer re-issues that request, marked so
    expect(runs.some((r) => r.reissued === 1)).toBe(true);
  }, 600_000);

  it('a write cut off, whose file someone changed before the resume, ends blocked_uncertain and is left for a person', async () => {
    const repo = fixtureRepo('stats');
    const home = keelHome();
    const server = await model(TURNS);
    const runId = '20261205-000000-0000ff';
    const args = ['fix', '--repo', repo, '--issue', ISSUE, '--json', ...modelFlags(server)];
    // event 21: the edit_file call's tool_start (run 3, plan 5, fix 2, the attempt's first 11)
    const env = { KEEL_BATCH_FIX_RUN_ID: runId, KEEL_FAULT_KILL_AFTER_EVENT: '21' };
    const first = await keel(args, { cwd: home, home, env, timeoutMs: 60_000 });
    expect(first.signal).toBe('SIGKILL');
    const db = openDb(join(home, 'keel.db'));
    const log = new EventLog(db);
    const attempt = log.childSessions(runId).find((s) => s.mode === 'edit')?.id ?? '';
    expect(log.events(attempt).at(-1)).toMatchObject({ type: 'tool_start', data: { tool: 'edit_file' } });
    db.close();
    const file = join(home, 'worktrees', runId, 'src', 'stats.js');
    const theirs = `${readFileSync(file, 'utf8')}// someone else was here\n`;
    writeFileSync(file, theirs);
    const resumed = await keel([...args, '--resume-run', runId], { cwd: home, home, timeoutMs: 60_000 });
    expect(resumed.code, resumed.stderr).toBe(1);
    const doc = JSON.parse(resumed.stdout);
    expect(doc).toMatchObject({ status: 'blocked_uncertain', code: 'BLOCKED_UNCERTAIN' });
    expect(doc.reason).toContain('src/stats.js');
    // nothing was written over their change, and the worktree stays for the person to look at
    expect(readFileSync(file, 'utf8')).toBe(theirs);
    expect(doc.worktree).toBe(join(home, 'worktrees', runId));
    // the model was never asked again: three requests before the kill, none after
    expect(server.requests.filter((r) => r.path.endsWith('/chat/completions')).length).toBe(3);
    // the audit chain records the resume and the effect left for a person, and verify vouches for both
    const tail = JSON.parse(
      (await keel(['audit', 'tail', '-n', '200', '--json'], { cwd: home, home })).stdout,
    ).lines as Array<Record<string, unknown>>;
    expect(tail.filter((l) => l.type === 'fix_resume')).toMatchObject([{ session_id: runId }]);
    const uncertain = tail.filter((l) => l.type === 'effect_uncertain');
    expect(uncertain).toMatchObject([{ session_id: attempt, tool: 'edit_file' }]);
    expect(String(uncertain[0]?.reason)).toContain('src/stats.js');
    const verified = await keel(['audit', 'verify', '--json'], { cwd: home, home });
    expect(verified.code, verified.stdout).toBe(0);
    // so an edit of either line is caught, and named
    const auditDir = join(home, 'audit');
    for (const type of ['fix_resume', 'effect_uncertain']) {
      const day = readdirSync(auditDir).find((f) =>
        readFileSync(join(auditDir, f), 'utf8').includes(`"type":"${type}"`),
      );
      const file = join(auditDir, day ?? 'none');
      const original = readFileSync(file, 'utf8');
      const lines = original.split('\n');
      const at = lines.findIndex((l) => l.includes(`"type":"${type}"`));
      lines[at] = (lines[at] ?? '').replace(`"session_id":"`, `"session_id":"x`);
      writeFileSync(file, lines.join('\n'));
      const broken = await keel(['audit', 'verify', '--json'], { cwd: home, home });
      expect(broken.code, type).toBe(1);
      expect(JSON.parse(broken.stdout), type).toMatchObject({ ok: false, file, line: at + 1 });
      writeFileSync(file, original);
    }
  }, 120_000);

  it('killed around a failed attempt’s verdict, its rollback and the next attempt’s start, a fix resumes to the same end', async () => {
    const edit = (to: string): ScriptTurn => ({
      tool_calls: [
        { name: 'edit_file', arguments: { path: 'src/stats.js', old_string: BUGGY, new_string: to } },
      ],
    });
    const twoAttempts: ScriptTurn[] = [
      { text: '1. Change the divisor.' },
      edit('  return sum(values) / (values.length + 2);'),
      { text: 'changed the divisor.' },
      edit('  return sum(values) / values.length;'),
      { text: 'mean now divides by the length.' },
    ].map((turn, i) => ({ ...turn, usage: { prompt_tokens: 100 * (i + 1), completion_tokens: i + 1 } }));
    const reference = await fixKilledAt(undefined, 0x100, twoAttempts);
    expect(reference.doc).toMatchObject({ status: 'verified', attempts: 2 });
    // the first verdict, the next attempt's log line, its session's start and its task (with the feedback)
    const first = reference.verdictsAt[0] ?? 0;
    expect(first).toBeGreaterThan(0);
    const boundaries = [first - 1, first, first + 1, first + 2, first + 3];
    const runs = await pool(boundaries, 3, (at) => fixKilledAt(at, 0x100 + at, twoAttempts));
    for (const [i, run] of runs.entries()) {
      const at = `killed after event ${boundaries[i]}`;
      expect(run.doc, at).toEqual(reference.doc);
      expect(run.diff, at).toBe(reference.diff);
      expect(run.ledger, at).toEqual(reference.ledger);
      expect(run.requests, at).toBe(reference.requests);
      expect(run.doubled, at).toEqual([]);
    }
  }, 300_000);
});
