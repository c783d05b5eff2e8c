/**
 * Batch runs in the browser workspace, in Chromium against the real `keel serve`, read from the team
 * store the config names (here the default SQLite keel.db): progress, each task's state and verdict, the
 * spend over time with its values as text, and the ledger; a run that moves on is shown moving on.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claimAndCall, createBatch, finishTask, seedStore } from '../helpers/batch-seed.js';
import { gitRepo } from '../helpers/tmp.js';
import { keelHome } from './harness.js';
import { startServe } from './serve-harness.js';
import { axe, CHROMIUM, shot, signedInPage } from './web-harness.js';

describe.skipIf(!existsSync(CHROMIUM))('the web workspace: batch runs (chromium)', () => {
  it("shows a batch's progress, tasks, spend over time and ledger from the team store, and follows it as it moves on", async () => {
    const home = keelHome();
    const project = gitRepo({ 'README.md': '# p\n' });
    const seed = await seedStore(join(home, 'keel.db'));
    await createBatch(seed, 'nightly', { 'mean-bug': project, 'sum-bug': project, 'max-bug': project });
    const a = await claimAndCall(seed, 'nightly', 3000, 0.0042);
    await finishTask(seed, a, 'done');
    const b = await claimAndCall(seed, 'nightly', 5000, 0.0031);
    await finishTask(seed, b, 'failed');
    const c = await claimAndCall(seed, 'nightly', 4000, 0.0017);

    const s = await startServe({ cwd: project, home });
    const { page, errors } = await signedInPage(s);
    await page.getByRole('link', { name: 'Batches' }).click();
    await page.getByRole('link', { name: 'nightly' }).click();

    await page.getByText('2 of 3 tasks ended · 1 running · 0 queued').waitFor();
    const rows = page.locator('tr[data-task]');
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-task')))).toEqual([
      'mean-bug',
      'sum-bug',
      'max-bug',
    ]);
    const row = (id: string) => page.locator(`tr[data-task="${id}"] td`);
    expect(await row(a).allTextContents()).toEqual([
      `${a}fix ${a}`,
      'done',
      'verified',
      '1',
      '1',
      '$0.0042',
      `keel/fix-${a}-abc123`,
    ]);
    expect((await row(b).allTextContents()).slice(1, 3)).toEqual(['failed', 'failed']);
    expect((await row(b).allTextContents())[6]).toBe(`${b}: not verified`);
    expect((await row(c).allTextContents()).slice(1, 3)).toEqual(['running', 'unfinished']);

    // the charts carry their numbers as text
    const states = page.getByRole('img', { name: 'Tasks by state' });
    expect(await states.locator('.bar .value').allTextContents()).toEqual([
      '0 queued',
      '1 running',
      '1 done',
      '1 failed',
      '0 cancelled',
    ]);
    const spend = page.getByRole('img', { name: 'Spend over time' });
    expect(await spend.locator('.point .value').allTextContents()).toEqual(['$0.0042', '$0.0073', '$0.0090']);
    expect(await spend.evaluate((svg) => svg.querySelector('desc')?.textContent)).toBe(
      '+3 s: $0.0042; +9 s: $0.0073; +14 s: $0.0090',
    );
    expect(await page.locator('tr[data-call]').count()).toBe(3);
    expect(await page.getByText('1 verified · 3 model calls · spent $0.0090').count()).toBe(1);
    expect(await axe(page), 'the batch page').toEqual([]);
    await shot(page, 'batch');

    // the run moves on: the page follows
    await finishTask(seed, c, 'done');
    await seed.store.close();
    await page.getByText('3 of 3 tasks ended · 0 running · 0 queued').waitFor({ timeout: 15_000 });
    expect((await row(c).allTextContents()).slice(1, 3)).toEqual(['done', 'verified']);
    expect(errors).toEqual([]);
  }, 120_000);
});
