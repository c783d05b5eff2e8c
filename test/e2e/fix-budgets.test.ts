/**
 * `keel fix`'s budgets are the run's, not each attempt's: a run whose token budget the plan and the first
 * attempt used up starts no second attempt.
 */
import { describe, expect, it } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import { editTurns, type FixDoc, fixtureRepo, modelPosts, planTurns } from './fix-harness.js';
import { keel, keelHome, model, modelFlags } from './harness.js';

const usage = { prompt_tokens: 250, completion_tokens: 50 };
const withUsage = (turns: ScriptTurn[]) => turns.map((turn) => ({ ...turn, usage }));
const BUG = '  return sum(values) / (values.length + 1);';

describe('keel fix: budgets', () => {
  it("max_tokens is the run's: the plan and attempt 1 use it up, and attempt 2 never starts", async () => {
    const repo = fixtureRepo('stats');
    const server = await model(
      withUsage([
        ...planTurns('src/stats.js', '1. Fix mean.'),
        // a wrong fix: the verifier refuses it
        ...editTurns('src/stats.js', BUG, '  return sum(values) / (values.length + 2);', 'Fixed.'),
        // what a second attempt would do, if it were given a fresh budget
        ...editTurns('src/stats.js', BUG, '  return sum(values) / values.length;', 'Fixed.'),
      ]),
    );
    const home = keelHome('[budgets]\nmax_tokens = 1000\n');
    const run = await keel(
      [
        'fix',
        '--repo',
        repo,
        '--json',
        ...modelFlags(server),
        '--issue',
        'mean is off',
        '--max-attempts',
        '3',
      ],
      { cwd: home, home, timeoutMs: 25_000 },
    );
    const doc = JSON.parse(run.stdout) as FixDoc;

    expect(run.code, run.stderr).toBe(1);
    expect(doc).toMatchObject({ code: 'BUDGET_EXCEEDED', status: 'failed', attempts: 1 });
    expect(doc.summary).toContain('max_tokens: the run has used 1200 of 1000 tokens');
    // 2 plan requests + 2 for attempt 1; none for attempt 2
    expect(modelPosts(server)).toBe(4);
  });
});
