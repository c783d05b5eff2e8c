/**
 * What the browser workspace shows is what the log says happened, in Chromium against the real `keel serve`:
 * this project's sessions with subagents and forks under their parent (a fork is not an agent), a running
 * subagent shown running, a question shown as "waiting for approval" (the subagent's and the session's own),
 * the wait for the model counted live, "Cancel run" only while a turn runs, a call without arguments shown
 * by its name, and no empty agents panel.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { gitRepo } from '../helpers/tmp.js';
import { keelHome, model, modelFlags } from './harness.js';
import { startServe } from './serve-harness.js';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(process.cwd(), 'test-results', 'web');

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

let browser: Browser | undefined;
afterAll(async () => {
  await browser?.close();
});

describe.skipIf(!existsSync(CHROMIUM))(
  'the web workspace shows what the log says (chromium, real keel serve)',
  () => {
    it('lists children under parents, badges questions, counts the model wait, and offers Cancel only while a turn runs', async () => {
      const server = await model([
        // the session spawns a helper and waits for it
        {
          tool_calls: [
            { name: 'spawn_agent', arguments: { name: 'helper', task: 'helper task: change b.txt' } },
            { name: 'wait_agent', arguments: {} },
          ],
        },
        // the helper's write waits for a person (in its parent's page)
        {
          task: 'helper task',
          tool_calls: [{ name: 'edit_file', arguments: { path: 'b.txt', old_string: 'b', new_string: 'B' } }],
        },
        { task: 'helper task', text: 'helper changed b.txt' },
        // then a call without arguments, and a write of the session's own that waits for a person
        {
          tool_calls: [
            { name: 'run_tests', arguments: {} },
            { name: 'edit_file', arguments: { path: 'a.txt', old_string: 'a', new_string: 'A' } },
          ],
        },
        { text: 'S1 done' },
        // the fork's turn: the model never answers; the person cancels
        { hang: true },
      ]);
      const repo = gitRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
      const other = gitRepo();
      const home = keelHome('approvals = "writes"\n');
      // a session of another project in the same KEEL_HOME
      const db = openDb(join(home, 'keel.db'));
      new EventLog(db).createSession({
        id: '20260101-000000-0b0b0b',
        mode: 'ask',
        cwd: other,
        provider: 'openai',
        model: 'test-model',
        prompt: 'OTHER-PROJECT-PROMPT',
      });
      db.close();
      const s = await startServe({ cwd: repo, home, args: modelFlags(server) });

      browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
      });
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const pageErrors: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(e.message));
      await page.goto(`http://127.0.0.1:${s.port}/#token=${s.token}`);
      await page.getByRole('heading', { name: 'Sessions' }).waitFor();
      // the list says whose sessions it shows
      await expect.poll(() => page.locator('.project').textContent(), { timeout: 10_000 }).toContain(repo);

      await page.getByRole('link', { name: 'New session' }).first().click();
      await page.getByLabel('Mode').selectOption('edit');
      await page.getByLabel('Prompt').fill('S1 spawn a helper');
      await page.getByLabel('Prompt').press('Enter');
      await page.waitForURL(/#\/s\/[\w.-]+$/);
      const s1 = new URL(page.url()).hash.replace('#/s/', '');

      const title = page.locator('h1.session-title .badge');
      const approval = page.locator('article.approval');
      // the helper's question: the session waits for approval, the helper is running (not failed)
      await approval.filter({ hasText: 'for helper' }).waitFor({ timeout: 30_000 });
      await expect.poll(() => title.textContent(), { timeout: 10_000 }).toBe('waiting for approval');
      const helperNode = page.locator('.tree li li', { hasText: 'helper task' });
      await expect
        .poll(() => helperNode.locator('.badge').first().textContent(), { timeout: 10_000 })
        .toBe('running');
      await shot(page, 'workspace-1-subagent-question');
      await approval.getByRole('button', { name: 'Allow' }).click();

      // the session's own question (in its log as a gate_decision ask): waiting for approval again
      await approval.filter({ hasText: 'a.txt' }).waitFor({ timeout: 30_000 });
      await expect.poll(() => title.textContent(), { timeout: 10_000 }).toBe('waiting for approval');
      expect(await page.getByRole('button', { name: 'Cancel run' }).isVisible()).toBe(true);
      await approval.getByRole('button', { name: 'Allow' }).click();

      const end = page.locator('.msg.end');
      await end.waitFor({ timeout: 30_000 });
      expect(await end.textContent()).toContain('COMPLETED');
      await expect.poll(() => title.textContent(), { timeout: 10_000 }).toBe('completed');
      // a finished session offers no cancel
      await expect
        .poll(() => page.getByRole('button', { name: 'Cancel run' }).count(), { timeout: 10_000 })
        .toBe(0);
      // a call without arguments shows its name, not `{}`
      const runTests = page.locator('li.call', { has: page.locator('code.tool', { hasText: 'run_tests' }) });
      expect(await runTests.locator('.args').textContent()).toBe('');
      const wait = page.locator('li.call', { has: page.locator('code.tool', { hasText: 'wait_agent' }) });
      expect(await wait.locator('.args').textContent()).toBe('');
      await expect
        .poll(() => page.locator('.agents .facts').textContent(), { timeout: 10_000 })
        .toBe('1 subagent: 1 done');

      // a fork is a session of its own, not an agent: it has no agents panel
      await page.getByRole('button', { name: 'Fork' }).click();
      await page.waitForURL((url) => url.hash.startsWith('#/s/') && !url.hash.endsWith(s1));
      const fork = new URL(page.url()).hash.replace('#/s/', '');
      await page.locator('.agents[data-ready]').waitFor({ state: 'attached' });
      expect(await page.locator('.agents').isHidden()).toBe(true);
      expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);

      // its turn waits on a model that does not answer: the page counts the wait, and Cancel ends it
      await page.getByLabel('Message').fill('wait here');
      await page.getByLabel('Message').press('Enter');
      const activity = page.locator('.activity');
      await expect
        .poll(() => activity.textContent(), { timeout: 30_000 })
        .toMatch(/^waiting for the model \(\d+ s\)$/);
      const seconds = async () => Number(/\((\d+) s\)/.exec((await activity.textContent()) ?? '')?.[1]);
      const first = await seconds();
      await expect.poll(seconds, { timeout: 10_000 }).toBeGreaterThan(first);
      await shot(page, 'workspace-2-waiting-for-the-model');
      expect(await title.textContent()).toBe('running');
      await page.getByRole('button', { name: 'Cancel run' }).click();
      await expect.poll(() => title.textContent(), { timeout: 30_000 }).toBe('cancelled');
      await expect
        .poll(() => page.getByRole('button', { name: 'Cancel run' }).count(), { timeout: 10_000 })
        .toBe(0);
      expect(await activity.isHidden()).toBe(true);

      // the list: this project's sessions only; the helper and the fork under the session, one agent
      await page.getByRole('link', { name: 'Sessions' }).first().click();
      const rows = page.locator('tr[data-session]');
      await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(3);
      const row = (id: string) => page.locator(`tr[data-session="${id}"]`);
      expect(await rows.first().getAttribute('data-session')).toBe(s1);
      expect(await row(s1).locator('td[data-label="Agents"]').textContent()).toBe('1');
      expect(await row(fork).getAttribute('data-depth')).toBe('1');
      expect(await row(fork).locator('td.prompt').textContent()).toContain('fork');
      const helper = rows.filter({ hasText: 'helper task' });
      expect(await helper.getAttribute('data-depth')).toBe('1');
      expect(await helper.getAttribute('data-state')).toBe('completed');
      expect(await page.locator('main').textContent()).not.toContain('OTHER-PROJECT-PROMPT');
      await shot(page, 'workspace-3-list');
      expect(pageErrors).toEqual([]);
    }, 180_000);
  },
);
