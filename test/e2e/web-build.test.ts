/**
 * A build run's tests approved on the page, in Chromium against the real `keel serve`: while they wait the
 * tab's title and favicon say so and a notification names the build (a click opens its run); the written
 * tests' diff waits with Approve / Reject; Approve builds the feature, the alert clears, and the page
 * follows the run to verified.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { git } from '../helpers/tmp.js';
import { BUILD_TURNS, MEDIAN, SUM, TESTS_TURNS, tinyProject } from './build-harness.js';
import { keelHome, model, modelFlags, withEventLog } from './harness.js';
import { startServe } from './serve-harness.js';
import { axe, CHROMIUM, signedInPage, spyOnNotifications } from './web-harness.js';

describe.skipIf(!existsSync(CHROMIUM))(
  'the web workspace: a build run approved on the page (chromium)',
  () => {
    it('tells of the waiting tests in the title and a notification, shows their diff with Approve / Reject; Approve builds the feature and the page follows it to verified', async () => {
      const server = await model([...TESTS_TURNS, ...BUILD_TURNS]);
      const home = keelHome();
      const repo = tinyProject();
      const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
      const id = (await s.api('POST', '/v1/build', { feature: 'add a median function to src/stats.js' })).body
        .run_id as string;
      const { page } = await signedInPage(s, { viewport: { width: 1280, height: 900 }, bypassCSP: true });
      // notifications on, each one kept so its click can be played
      await spyOnNotifications(page.context());
      await page.evaluate("localStorage.setItem('keel.notify', 'on')");
      await page.reload();

      // waiting, from the sessions list: the title, the favicon and a notification naming the build
      await expect
        .poll(() => page.title(), { timeout: 60_000 })
        .toBe('(1) Approval waiting · keel workspace');
      expect(await page.locator('#favicon').getAttribute('data-state')).toBe('waiting');
      await expect
        .poll(() => page.evaluate('window.notes.map((n) => n.text)'))
        .toEqual(['keel: build approval waiting: add a median function to src/stats.js']);
      await page.evaluate('window.notes[0].note.onclick()');
      await expect.poll(() => new URL(page.url()).hash).toBe(`#/runs/${id}`);

      const question = page.getByRole('region', { name: 'Approve the tests' });
      await question.getByRole('button', { name: 'Approve' }).waitFor({ timeout: 60_000 });
      expect(await question.locator('pre.diff').textContent()).toContain("+test('median of 3, 1, 2 is 2'");
      await expect.poll(() => page.locator('h1').textContent()).toContain('Build run');
      expect(await axe(page), 'the build run waiting').toEqual([]);
      expect((await s.api('GET', `/v1/runs/${id}`)).body.status).toBe('waiting');

      await question.getByRole('button', { name: 'Approve' }).click();
      await question.getByText('Approved: the tests are frozen').waitFor({ timeout: 20_000 });
      await expect.poll(() => page.title(), { timeout: 15_000 }).toBe('keel workspace');
      expect(await page.locator('#favicon').getAttribute('data-state')).toBe('idle');
      // followed as a fix run: the run's own steps, then its verdict
      await page
        .locator('ol.steps li[data-step="end"]')
        .getByText('verified', { exact: true })
        .waitFor({ timeout: 60_000 });
      await expect
        .poll(async () => (await s.api('GET', `/v1/runs/${id}`)).body.status, { timeout: 30_000 })
        .toBe('verified');
      await page.locator('dl.facts-grid').getByText('verified', { exact: true }).waitFor({ timeout: 20_000 });
      expect(await question.isHidden()).toBe(true);
      const run = (await s.api('GET', `/v1/runs/${id}`)).body;
      expect(git(repo, 'show', `${run.branch}:src/stats.js`)).toBe(SUM + MEDIAN);
      // the click was the person's yes, logged
      const decisions = withEventLog(home, (log) =>
        log
          .events(run.tests_session)
          .filter((e) => e.type === 'gate_decision' && e.data.tool === 'keel build'),
      );
      expect(decisions.map((e) => e.data.decision)).toEqual(['allow']);
      // the runs list names the run by what it is for, not by its id
      await page.goto(`http://127.0.0.1:${s.port}/#/runs`);
      await page.locator(`tr[data-run="${id}"] a`).getByText('add a median function').waitFor();
    }, 120_000);
  },
);
