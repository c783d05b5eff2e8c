/**
 * Pictures and settings in the browser workspace, in Chromium against the real `keel serve`: a session's
 * tokens and spend per round as SVG charts whose labelled values are the log's own numbers, and the
 * mode and model of the next turn switched from the page (recorded in the log, shown in the page).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { gitRepo } from '../helpers/tmp.js';
import { editTurns, fixtureRepo, planTurns } from './fix-harness.js';
import { keelHome, lastSessionEvents, model, modelFlags } from './harness.js';
import { type Served, startServe } from './serve-harness.js';
import { CHROMIUM, shot, signedInPage } from './web-harness.js';

async function settled(s: Served, id: string, state: string): Promise<void> {
  await expect
    .poll(async () => (await s.api('GET', `/v1/sessions/${id}`)).body.state, { timeout: 30_000 })
    .toBe(state);
}

describe.skipIf(!existsSync(CHROMIUM))('the web workspace: charts and next-turn settings (chromium)', () => {
  it("charts tokens and spend per round with the log's numbers, and switches the next turn's mode and model", async () => {
    const server = await model([
      {
        model: 'priced',
        tool_calls: [{ name: 'read_file', arguments: { path: 'a.txt' } }],
        usage: { prompt_tokens: 1200, completion_tokens: 34 },
      },
      {
        model: 'priced',
        text: 'a.txt holds one line.',
        usage: { prompt_tokens: 1500, completion_tokens: 21 },
      },
      {
        model: 'other',
        text: 'planned with the other model',
        usage: { prompt_tokens: 900, completion_tokens: 7 },
      },
    ]);
    const home = keelHome(
      '[pricing.priced]\ninput_per_mtok = 2.0\noutput_per_mtok = 10.0\n[pricing.other]\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\n',
    );
    const repo = gitRepo({ 'a.txt': 'a\n' });
    const s = await startServe({ cwd: repo, home, args: modelFlags(server, 'priced') });
    const id = (await s.api('POST', '/v1/sessions', { prompt: 'CHART this' })).body.session_id as string;
    await settled(s, id, 'completed');

    const { page, errors } = await signedInPage(s, { viewport: { width: 1280, height: 900 } });
    await page.getByRole('link', { name: /CHART this/ }).click();
    const tokens = page.getByRole('img', { name: 'Tokens per round' });
    const spend = page.getByRole('img', { name: 'Spend per round' });
    await tokens.waitFor();

    // the log's own numbers, per round
    const rounds = lastSessionEvents(home).filter((e) => e.type === 'assistant_message');
    const logTokens = rounds.map((e) => {
      const u = e.data.usage as { input: number; output: number };
      return u.input + u.output;
    });
    const logCost = rounds.map((e) => e.data.cost_usd as number);
    expect(logTokens).toEqual([1234, 1521]);
    expect(logCost.every((c) => typeof c === 'number' && c > 0)).toBe(true);
    // each bar says its value in text (readable without colour), under a round label
    expect(await tokens.locator('.group .label').allTextContents()).toEqual(['R1', 'R2']);
    expect(await tokens.locator('.bar .value').allTextContents()).toEqual(logTokens.map(String));
    const shownCost = (await spend.locator('.bar .value').allTextContents()).map((t) => Number(t.slice(1)));
    expect(shownCost).toEqual(logCost.map((c) => Number(c.toPrecision(6))));
    // the description reads the figures out
    const desc = await tokens.evaluate((svg) => svg.querySelector('desc')?.textContent);
    expect(desc).toBe('R1: 1234; R2: 1521');

    // the next turn in plan mode with another model, chosen in the page
    await page.selectOption('#next-mode', 'plan');
    await page.fill('#next-model', 'other');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('next turns: mode plan, model other').waitFor();
    expect((await s.api('GET', `/v1/sessions/${id}`)).body).toMatchObject({ mode: 'plan', model: 'other' });
    await page.fill('#message', 'and now plan');
    await page.keyboard.press('Enter');
    await page.getByText('planned with the other model').waitFor();
    await settled(s, id, 'completed');
    const resume = lastSessionEvents(home).findLast((e) => e.type === 'session_resume');
    expect(resume?.data).toMatchObject({ mode: 'plan', model: 'other' });
    // the third round joins the chart
    await expect.poll(() => tokens.locator('.bar .value').allTextContents()).toEqual(['1234', '1521', '907']);
    await shot(page, 'charts');
    expect(errors).toEqual([]);
  }, 90_000);

  it("charts a fix run's tests passed and failed per attempt with the log's numbers", async () => {
    const buggy = '  return sum(values) / (values.length + 1);';
    const server = await model([
      ...planTurns('src/stats.js', '1. mean divides by one too many.'),
      ...editTurns('src/stats.js', buggy, '  return sum(values) / (values.length - 1);', 'Fixed!'),
      ...editTurns('src/stats.js', buggy, '  return sum(values) / values.length;', 'Fixed for real.'),
    ]);
    const home = keelHome();
    const s = await startServe({ cwd: fixtureRepo('stats'), home, args: modelFlags(server) });
    const id = (await s.api('POST', '/v1/fix', { task: 'mean() of [2, 4, 6] returns 3, not 4' })).body
      .run_id as string;
    await expect
      .poll(async () => (await s.api('GET', `/v1/runs/${id}`)).body.status, { timeout: 60_000 })
      .toBe('verified');
    const db = openDb(join(home, 'keel.db'));
    const events = new EventLog(db).events(id);
    db.close();
    const base = events.find((e) => e.type === 'fix_baseline')?.data as {
      passing: string[];
      failing: string[];
    };
    const verdicts = events
      .filter((e) => e.type === 'fix_verdict')
      .map((e) => e.data.tests as { passed: number; failed: number });
    expect(verdicts).toHaveLength(2);
    expect(verdicts[0]?.failed).toBeGreaterThan(0);
    expect(verdicts[1]?.failed).toBe(0);
    const expected = [
      `${base.passing.length} passed`,
      `${base.failing.length} failed`,
      ...verdicts.flatMap((t) => [`${t.passed} passed`, `${t.failed} failed`]),
    ];

    const { page } = await signedInPage(s, { viewport: { width: 1280, height: 900 } });
    await page.goto(`http://127.0.0.1:${s.port}/#/runs/${id}`);
    const chart = page.getByRole('img', { name: 'Tests per attempt' });
    await expect
      .poll(() => chart.locator('.bar .value').allTextContents(), { timeout: 20_000 })
      .toEqual(expected);
    expect(await chart.locator('.group .label').allTextContents()).toEqual([
      'baseline',
      'attempt 1',
      'attempt 2',
    ]);
    await shot(page, 'run-chart');
  }, 120_000);
});
