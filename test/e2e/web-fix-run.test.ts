/**
 * A fix run followed live in the browser workspace, in Chromium against the real `keel serve`: the
 * baseline, each attempt with its test counts and its diff, and the verdict appear as the run's log
 * records them (attempt 1's verdict is on the page while attempt 2 still runs); the verified fix is
 * then merged into the checked-out branch from the page, and its patch downloaded.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git } from '../helpers/tmp.js';
import { editTurns, fixtureRepo, planTurns } from './fix-harness.js';
import { keel, keelHome, model, modelFlags } from './harness.js';
import { startServe } from './serve-harness.js';
import { axe, CHROMIUM, shot, signedInPage } from './web-harness.js';

const BUGGY = '  return sum(values) / (values.length + 1);';
const FIXED = '  return sum(values) / values.length;';

describe.skipIf(!existsSync(CHROMIUM))('the web workspace: a fix run, live (chromium)', () => {
  it('shows the baseline, each attempt with its tests and diff, and the verdict as they happen; merges the verified fix and downloads its patch', async () => {
    const second = editTurns('src/stats.js', BUGGY, FIXED, 'Fixed for real.');
    // attempt 2 takes a while to answer: the page must already show attempt 1 judged
    const slow = { ...second[0], delay_ms: 4000 };
    const server = await model([
      ...planTurns('src/stats.js', '1. mean divides by one too many.'),
      ...editTurns('src/stats.js', BUGGY, '  return sum(values) / (values.length - 1);', 'Fixed!'),
      slow,
      ...second.slice(1),
    ]);
    const home = keelHome();
    const repo = fixtureRepo('stats');
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
    const id = (await s.api('POST', '/v1/fix', { task: 'mean() of [2, 4, 6] returns 3, not 4' })).body
      .run_id as string;

    const { page, errors } = await signedInPage(s, {
      viewport: { width: 1280, height: 900 },
      bypassCSP: true,
      acceptDownloads: true,
    });
    await page.goto(`http://127.0.0.1:${s.port}/#/runs/${id}`);

    const steps = page.locator('ol.steps');
    const baseline = steps.locator('li[data-step="baseline"]');
    await baseline.waitFor({ timeout: 60_000 });
    await expect.poll(() => baseline.textContent()).toMatch(/Baseline.*exited 1.*passed · [1-9]\d* failed/);
    // attempt 1 judged while attempt 2 runs: the run is still going when the page shows it
    const one = steps.locator('li[data-step="attempt-1"]');
    await one.getByText('failed', { exact: true }).waitFor({ timeout: 60_000 });
    await steps
      .locator('li[data-step="attempt-2"]')
      .getByText('editing and testing')
      .waitFor({ timeout: 30_000 });
    expect((await s.api('GET', `/v1/runs/${id}`)).body.status).toBe('running');
    expect(await one.textContent()).toMatch(/\d+ passed · [1-9]\d* failed/);
    await one.getByText("Attempt 1's diff").click();
    expect(await one.locator('pre.diff').textContent()).toContain(
      '+  return sum(values) / (values.length - 1);',
    );
    await shot(page, 'run-live');

    // attempt 2 verified, then the run's verdict
    const two = steps.locator('li[data-step="attempt-2"]');
    await two.getByText('verified', { exact: true }).waitFor({ timeout: 60_000 });
    expect(await two.textContent()).toMatch(/\d+ passed · 0 failed/);
    await steps
      .locator('li[data-step="end"]')
      .getByText('verified', { exact: true })
      .waitFor({ timeout: 30_000 });
    const chart = page.getByRole('img', { name: 'Tests per attempt' });
    await expect
      .poll(() => chart.locator('.group .label').allTextContents())
      .toEqual(['baseline', 'attempt 1', 'attempt 2']);

    // the patch, then the merge (after the person's yes in the dialog)
    const merge = page.getByRole('button', { name: 'Merge into the current branch' });
    await merge.waitFor({ timeout: 20_000 });
    expect(await axe(page), 'the run page').toEqual([]);
    // the download in a page under its own Content-Security-Policy (axe needs it bypassed above)
    const { page: plain } = await signedInPage(s, { acceptDownloads: true });
    await plain.goto(`http://127.0.0.1:${s.port}/#/runs/${id}`);
    const [download] = await Promise.all([
      plain.waitForEvent('download'),
      plain.getByRole('button', { name: 'Download the patch' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`keel-fix-${id}.patch`);
    expect(readFileSync((await download.path()) as string, 'utf8')).toContain(`+${FIXED}`);
    await plain.context().close();
    // a "no" in the dialog applies nothing
    page.once('dialog', (d) => void d.dismiss());
    await merge.click();
    expect(git(repo, 'rev-parse', 'HEAD').trim()).toBe(head);
    page.once('dialog', (d) => void d.accept());
    await merge.click();
    const applied = await page.getByText(/Applied: main is now at [0-9a-f]{12}\./).textContent();
    const now = git(repo, 'rev-parse', 'HEAD').trim();
    expect(applied).toContain(now.slice(0, 12));
    expect(now).not.toBe(head);
    expect(readFileSync(join(repo, 'src/stats.js'), 'utf8')).toContain(FIXED);
    await shot(page, 'run-applied');
    expect(errors).toEqual([]);
  }, 180_000);

  it("charts the routing tiers' share of a fix run's calls and cost from its ledger rows, each bar labelled", async () => {
    // attempt 1 on the cheap tier fails; the escalated attempt 2 on the strong tier verifies
    const cheap = await model([
      ...planTurns('src/stats.js', '1. mean divides by one too many.'),
      ...editTurns('src/stats.js', BUGGY, '  return sum(values) / (values.length - 1);', 'Fixed!'),
    ]);
    const strong = await model(editTurns('src/stats.js', BUGGY, FIXED, 'Divides by the length.'));
    // the ledger prices a call by [pricing] (a tier's own price is the session's): both say the same here
    const tier = (name: string, url: string, input: number, output: number) =>
      `[[routing.tiers]]\nname = "${name}"\nmodel = "${name}-model"\nbase_url = "${url}"\napi_key_env = "KEY"\ninput_per_mtok = ${input}\noutput_per_mtok = ${output}\n\n[pricing."${name}-model"]\ninput_per_mtok = ${input}\noutput_per_mtok = ${output}\n`;
    const home = keelHome(
      `provider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n\n${tier('cheap', cheap.url, 0.1, 0.4)}\n${tier('strong', strong.url, 3, 15)}`,
    );
    const repo = fixtureRepo('stats');
    const fixed = await keel(
      ['fix', '--repo', repo, '--json', '--issue', 'mean() of [2, 4, 6] returns 3, not 4'],
      {
        cwd: home,
        home,
        env: { KEY: 'k' },
        timeoutMs: 60_000,
      },
    );
    expect(fixed.code, fixed.stderr).toBe(0);
    const id = JSON.parse(fixed.stdout).session_id as string;
    const s = await startServe({ cwd: repo, home, env: { KEY: 'k' } });
    const run = (await s.api('GET', `/v1/runs/${id}`)).body;
    expect(run.tiers.map((t: { tier: string; calls: number }) => [t.tier, t.calls])).toEqual([
      ['cheap', 4],
      ['strong', 2],
    ]);
    const [c, st] = run.tiers.map((t: { cost_usd: number }) => t.cost_usd);
    expect(c + st).toBeCloseTo(run.cost_usd, 10);
    expect(st).toBeGreaterThan(c);

    const { page, errors } = await signedInPage(s, {
      viewport: { width: 390, height: 900 },
      bypassCSP: true,
    });
    await page.goto(`http://127.0.0.1:${s.port}/#/runs/${id}`);
    const section = page.getByRole('region', { name: 'Routing tiers' });
    await section.waitFor({ timeout: 30_000 });
    // readable without colour: every bar names its tier and says its value and share as text
    const calls = section.getByRole('img', { name: 'Calls by routing tier' });
    expect(await calls.locator('.group .label').allTextContents()).toEqual(['cheap', 'strong']);
    expect(await calls.locator('.bar .value').allTextContents()).toEqual(['4 (67%)', '2 (33%)']);
    const cost = section.getByRole('img', { name: 'Cost by routing tier' });
    expect(await cost.locator('.group .label').allTextContents()).toEqual(['cheap', 'strong']);
    const pct = (v: number) => `${Math.round((v / (c + st)) * 100)}%`;
    expect(await cost.locator('.bar .value').allTextContents()).toEqual([
      `$${c.toFixed(4)} (${pct(c)})`,
      `$${st.toFixed(4)} (${pct(st)})`,
    ]);
    expect(await axe(page), 'the run page with its tier charts').toEqual([]);
    await shot(page, 'run-tiers');
    expect(errors).toEqual([]);
    await page.context().close();
  }, 180_000);
});
