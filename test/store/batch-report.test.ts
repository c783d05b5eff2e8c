import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureRepo } from '../e2e/fix-harness.js';
import { keel } from '../e2e/harness.js';
import { tempDir } from '../helpers/tmp.js';
import { line, scriptedHome, TURNS } from './batch-harness.js';

describe('keel batch report', () => {
  it('report recomputes verdicts, attempts and spend from the store; the same --run-id with other tasks is refused by id', async () => {
    const script = join(tempDir('keel-script-'), 'script.json');
    const home = scriptedHome(script, TURNS);
    const dir = tempDir('keel-batch-');
    const repo = fixtureRepo('stats');
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(
      file,
      line({ id: 'ok', repo, issue: 'mean() of [2, 4, 6] returns 3, not 4' }) +
        line({ id: 'gone', repo: 'no-such-repo', issue: 'x' }),
    );
    const run = await keel(['batch', file, '--run-id', 'r1', '--json'], {
      cwd: dir,
      home,
      timeoutMs: 120_000,
    });
    expect(run.code, run.stderr).toBe(1);
    // a model that would answer nothing now: the report calls none
    writeFileSync(script, JSON.stringify({ turns: [{ hang: true }] }));
    const report = await keel(['batch', 'report', 'r1', '--json'], { cwd: dir, home });
    expect(report.code, report.stderr).toBe(1);
    const doc = JSON.parse(report.stdout);
    expect(doc.tasks).toEqual([
      {
        id: 'ok',
        verdict: 'verified',
        attempts: 1,
        calls: 4,
        cost_usd: 0,
        unknown_cost_calls: 4,
        branch: expect.stringMatching(/^keel\/fix-/),
        error: null,
      },
      {
        id: 'gone',
        verdict: 'failed',
        attempts: 1,
        calls: 0,
        cost_usd: 0,
        unknown_cost_calls: 0,
        branch: null,
        error: `repo ${join(dir, 'no-such-repo')} does not exist`,
      },
    ]);
    expect(doc.totals).toEqual({ tasks: 2, verified: 1, calls: 4, cost_usd: 0, unknown_cost_calls: 4 });
    const text = await keel(['batch', 'report', 'r1'], { cwd: dir, home });
    expect(text.stdout).toContain('ok  verified  1 attempt  $0.0000 + 4 calls of unknown cost');
    expect(text.stdout).toContain('batch r1: 1/2 verified, 4 calls, $0.0000 + 4 calls of unknown cost');
    expect((await keel(['batch', 'report', 'nope'], { cwd: dir, home })).code).toBe(2);
    // the same run id with a changed task and a new one: refused, naming both; nothing queued or run
    const other = join(dir, 'other.jsonl');
    writeFileSync(
      other,
      line({ id: 'ok', repo, issue: 'another issue' }) +
        line({ id: 'gone', repo: 'no-such-repo', issue: 'x' }) +
        line({ id: 'extra', repo, issue: 'y' }),
    );
    const refused = await keel(['batch', other, '--run-id', 'r1'], { cwd: dir, home });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`run r1 was started with other tasks: ok, extra differ from ${other}`);
    const after = await keel(['batch', 'report', 'r1', '--json'], { cwd: dir, home });
    expect(JSON.parse(after.stdout).tasks.map((t: { id: string }) => t.id)).toEqual(['ok', 'gone']);
  }, 180_000);
});
