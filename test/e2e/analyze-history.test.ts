/** `keel analyze-history` through the binary: labels from the verifier, a grouped held-out split, --apply only when it is better. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { editTurns, fixtureRepo, planTurns } from './fix-harness.js';
import { keel, keelHome, model } from './harness.js';

const TIERS = (cheap: string, strong: string) => `provider = "openai"
[[routing.tiers]]
name = "cheap"
model = "cheap-model"
base_url = "${cheap}"
[[routing.tiers]]
name = "strong"
model = "strong-model"
base_url = "${strong}"
`;

/**
 * Past fix runs as keel records them: a routed first attempt on the cheap tier with its score, and the
 * verifier's verdict. The truth: a score from 0.3 up needed the strong tier, though the model said it was done.
 */
function seedRuns(home: string, n: number, from = 0): void {
  const db = openDb(join(home, 'keel.db'));
  try {
    const log = new EventLog(db);
    for (let i = from; i < from + n; i++) {
      const id = `seed-${i}`;
      const score = Math.round(((i * 37) % 50) * 10) / 1000; // 0 .. 0.49, spread
      const hard = score >= 0.3;
      log.createSession({
        id,
        mode: 'fix',
        cwd: `/repos/r${i}`,
        provider: 'openai',
        model: '',
        prompt: `bug ${i}`,
      });
      log.append(id, 'fix_routing', { tiers: [{ name: 'cheap' }, { name: 'strong' }], thresholds: [0.5] });
      log.createSession({
        id: `${id}-a1`,
        parentId: id,
        mode: 'edit',
        cwd: '/w',
        provider: 'openai',
        model: '',
        prompt: '',
      });
      log.append(`${id}-a1`, 'model_request', { round: 1, route: { tier: 'cheap', score } });
      log.append(`${id}-a1`, 'assistant_message', { round: 1, text: 'Fixed! All tests pass now.' });
      log.append(id, 'fix_verdict', { attempt: 1, status: hard ? 'failed' : 'verified' });
    }
    // left out: a scripted (or demo) run, and one that was not routed
    log.createSession({
      id: 'scripted',
      mode: 'fix',
      cwd: '/d',
      provider: 'scripted',
      model: '',
      prompt: 'x',
    });
    log.createSession({ id: 'plain', mode: 'fix', cwd: '/p', provider: 'openai', model: '', prompt: 'x' });
    log.append('plain', 'fix_verdict', { attempt: 1, status: 'failed' });
  } finally {
    db.close();
  }
}

describe('keel analyze-history', () => {
  it('refits the band from verdicts, says what it would do, and --apply writes the calibration with an audit line', async () => {
    // one real routed run: the cheap tier's first attempt fails verification, the strong tier's passes
    const buggy = '  return sum(values) / (values.length + 1);';
    const cheap = await model([
      ...planTurns('src/stats.js', 'Divide by the length.'),
      ...editTurns('src/stats.js', buggy, '  return sum(values) / (values.length - 1);', 'Fixed!'),
    ]);
    const strong = await model(
      editTurns('src/stats.js', buggy, '  return sum(values) / values.length;', 'Done.'),
    );
    const home = keelHome(TIERS(cheap.url, strong.url));
    const repo = fixtureRepo('stats');
    const fix = await keel(
      ['fix', '--repo', repo, '--json', '--issue', 'mean() of [2, 4, 6] returns 3, not 4'],
      {
        cwd: home,
        home,
        timeoutMs: 40_000,
      },
    );
    expect(fix.code, fix.stderr).toBe(0);
    seedRuns(home, 120);

    const dry = await keel(['analyze-history', '--json'], { cwd: home, home });
    expect(dry.code, dry.stderr).toBe(0);
    const doc = JSON.parse(dry.stdout);
    expect(doc).toMatchObject({
      runs: 121,
      excluded: { scripted: 1, 'not routed': 1 },
      current_thresholds: [0.5],
      thresholds_from: 'default',
      applied: null,
      decision: 'would apply (run with --apply)',
    });
    expect(doc.train_runs + doc.heldout_runs).toBe(121);
    expect(doc.heldout_runs).toBeGreaterThan(15);
    expect(doc.heldout_runs).toBeLessThan(45);
    expect(doc.fitted_thresholds[0]).toBeGreaterThan(0.25);
    expect(doc.fitted_thresholds[0]).toBeLessThanOrEqual(0.3);
    expect(doc.heldout.fitted_accuracy).toBeGreaterThan(doc.heldout.current_accuracy);
    expect(doc.heldout.interval[0]).toBeGreaterThan(0);
    const file = join(home, 'routing-calibration.json');
    expect(existsSync(file)).toBe(false);

    const applied = await keel(['analyze-history', '--apply'], { cwd: home, home });
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain(`applied: ${file}`);
    const cal = JSON.parse(readFileSync(file, 'utf8'));
    expect(cal).toMatchObject({ version: 1, thresholds: doc.fitted_thresholds, runs: 121 });
    expect(cal.heldout).toMatchObject({ runs: doc.heldout_runs, seed: 'keel' });
    const audit = JSON.parse(
      (await keel(['audit', 'tail', '-n', '20', '--json'], { cwd: home, home })).stdout,
    ).lines as Array<{ type: string; thresholds?: number[]; previous?: number[] }>;
    expect(audit.find((l) => l.type === 'routing_calibrated')).toMatchObject({
      previous: [0.5],
      thresholds: doc.fitted_thresholds,
    });
    // the bands in force now come from the file, and fitting again finds nothing better
    const again = JSON.parse((await keel(['analyze-history', '--json'], { cwd: home, home })).stdout);
    expect(again).toMatchObject({ thresholds_from: file, current_thresholds: doc.fitted_thresholds });
    expect(again.decision).toMatch(/^marginal, not applied: /);
  });

  it('too few runs: "marginal, not applied", and no file', async () => {
    const home = keelHome(TIERS('http://127.0.0.1:9/v1', 'http://127.0.0.1:9/v1'));
    seedRuns(home, 12);
    const run = await keel(['analyze-history', '--apply'], { cwd: home, home });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('marginal, not applied: 12 routed runs, fewer than 30');
    expect(existsSync(join(home, 'routing-calibration.json'))).toBe(false);
    // without tiers there is nothing to fit: a config error
    const none = await keel(['analyze-history'], { cwd: home, home: keelHome() });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('at least two [[routing.tiers]]');
  });
});
