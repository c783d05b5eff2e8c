/**
 * Choosing the project in the browser workspace, in Chromium against the real `keel serve --project A
 * --project B` with two real repositories: the header's labelled chooser (shown only when there is a
 * choice), by keyboard, switches the sessions, the files and a new session to B; the choice survives a
 * reload; it works at 390 px and passes axe-core. A question waiting in B while the page shows A is in
 * the title and the favicon, in B's option in words, and in a notification naming B; the header stays one
 * line at 1000 px.
 */
import { existsSync, realpathSync } from 'node:fs';
import { basename } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import { keelHome, model, modelFlags, withEventLog } from './harness.js';
import { type Served, startServe } from './serve-harness.js';
import { axe, CHROMIUM, shot, signedInPage, spyOnNotifications } from './web-harness.js';

async function settled(s: Served, id: string, project: string): Promise<void> {
  await expect
    .poll(async () => (await s.api('GET', `/v1/sessions/${id}?project=${project}`)).body.state, {
      timeout: 30_000,
    })
    .toBe('completed');
}

/** The prompts the sessions list shows. */
async function listed(page: Page): Promise<string> {
  await page.locator('tr[data-session]').first().waitFor();
  return (await page.locator('table').first().textContent()) ?? '';
}

describe.skipIf(!existsSync(CHROMIUM))('the web workspace: choosing the project (chromium)', () => {
  it('switches sessions, files and new sessions to the chosen project, remembers it, at 390 px, by keyboard, through axe', async () => {
    const server = await model([
      { task: 'ALPHA-ASK', text: 'alpha answer' },
      { task: 'BETA-ASK', text: 'beta answer' },
      { task: 'BETA-NEW', text: 'beta new answer' },
      // B's gated write: a question waits in B while the page shows A
      {
        task: 'BETA-WRITE',
        tool_calls: [{ name: 'write_file', arguments: { path: 'b.txt', content: 'B\n' } }],
      },
      { task: 'BETA-WRITE', text: 'beta wrote' },
    ]);
    const a = realpathSync(gitRepo({ 'README.md': '# Alpha\n', 'alpha-only.ts': 'export const a = 1;\n' }));
    const b = realpathSync(gitRepo({ 'README.md': '# Beta\n', 'beta-only.ts': 'export const b = 2;\n' }));
    const home = keelHome('approvals = "writes"\n');
    const s = await startServe({
      cwd: tempDir('keel-elsewhere-'),
      home,
      args: [...modelFlags(server), '--project', a, '--project', b],
    });
    const [nameA, nameB] = [basename(a), basename(b)];
    const alpha = (await s.api('POST', '/v1/sessions', { prompt: 'ALPHA-ASK' })).body.session_id;
    const beta = (await s.api('POST', `/v1/sessions?project=${nameB}`, { prompt: 'BETA-ASK' })).body
      .session_id;
    await settled(s, alpha, nameA);
    await settled(s, beta, nameB);

    const { page, errors } = await signedInPage(s);
    // the default project first: its session, not the other's
    const chooser = page.getByLabel('Project', { exact: true });
    await chooser.waitFor();
    expect(await chooser.inputValue()).toBe(nameA);
    expect(await listed(page)).toContain('ALPHA-ASK');
    expect(await listed(page)).not.toContain('BETA-ASK');
    expect(await axe(page), 'the chooser over the sessions list').toEqual([]);

    // a question waits in B while the page shows A, notifications on: the title and the favicon count it,
    // B's option says so in words, the notification names B, and the header is one line at 1000 px
    await spyOnNotifications(page.context());
    await page.evaluate("localStorage.setItem('keel.notify', 'on')");
    await page.setViewportSize({ width: 1000, height: 800 });
    await page.reload();
    await chooser.waitFor();
    const gated = (
      await s.api('POST', `/v1/sessions?project=${nameB}`, { prompt: 'BETA-WRITE', mode: 'edit' })
    ).body.session_id;
    await expect.poll(() => page.title(), { timeout: 15_000 }).toBe('(1) Approval waiting · keel workspace');
    expect(await page.locator('#favicon').getAttribute('data-state')).toBe('waiting');
    const option = (name: string) => page.locator(`#project option[value="${name}"]`).textContent();
    await expect.poll(() => option(nameB)).toBe(`${nameB} — 1 waiting`);
    expect(await option(nameA)).toBe(`${nameA} (default)`);
    await expect
      .poll(() => page.evaluate('window.seen'))
      .toEqual([`keel: approval waiting in ${nameB}: BETA-WRITE`]);
    expect(await chooser.inputValue()).toBe(nameA);
    const row = async (selector: string) => {
      const box = await page.locator(selector).boundingBox();
      return box ? Math.round(box.y + box.height / 2) : -1;
    };
    const brandRow = await row('.brand');
    for (const selector of ['#project', '#notify', 'nav a[href="#/files"]'])
      expect(Math.abs((await row(selector)) - brandRow), `${selector} on the brand's line`).toBeLessThan(8);
    expect(await page.getByRole('button', { name: 'Notify me of approvals', pressed: true }).count()).toBe(1);
    await shot(page, 'projects-0-waiting');
    // answered: the counts are gone
    const pending = (await s.api('GET', `/v1/sessions/${gated}?project=${nameB}`)).body.pending_approvals;
    await s.api('POST', `/v1/sessions/${gated}/approvals/${pending[0].id}?project=${nameB}`, {
      decision: 'allow',
    });
    await settled(s, gated, nameB);
    await expect.poll(() => page.title(), { timeout: 15_000 }).toBe('keel workspace');
    await expect.poll(() => option(nameB)).toBe(nameB);

    // by keyboard: Tab reaches the chooser, an arrow key chooses the second project
    await page.locator('body').click({ position: { x: 1, y: 1 } });
    let reached = false;
    for (let i = 0; i < 20 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = (await page.evaluate('document.activeElement?.id')) === 'project';
    }
    expect(reached).toBe(true);
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => chooser.inputValue()).toBe(nameB);
    await expect.poll(() => listed(page)).toContain('BETA-ASK');
    expect(await listed(page)).not.toContain('ALPHA-ASK');
    await shot(page, 'projects-1-second');

    // its files, not the other's
    await page.getByRole('link', { name: 'Files' }).click();
    const tree = page.locator('.file-tree');
    await tree.getByText('beta-only.ts').waitFor();
    expect(await tree.textContent()).not.toContain('alpha-only.ts');
    await tree.getByText('README.md').click();
    await page.locator('.preview h1').waitFor();
    expect(await page.locator('.preview h1').textContent()).toBe('Beta');

    // a session started from the page is the chosen project's
    await page.goto(`http://127.0.0.1:${s.port}/#/new`);
    await page.getByLabel('Prompt').fill('BETA-NEW');
    await page.getByRole('button', { name: /Start/ }).click();
    await page.waitForURL(/#\/s\/[\w.-]+$/);
    const newId = /#\/s\/([\w.-]+)$/.exec(page.url())?.[1] as string;
    expect(withEventLog(home, (log) => log.getSession(newId)?.cwd)).toBe(b);

    // the choice survives a reload; at phone width the chooser is there and nothing scrolls sideways
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`http://127.0.0.1:${s.port}/#/`);
    await page.reload();
    expect(await chooser.inputValue()).toBe(nameB);
    expect(await listed(page)).toContain('BETA-ASK');
    expect(await chooser.isVisible()).toBe(true);
    expect(
      await page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth'),
    ).toBe(false);
    expect(await axe(page), 'the chooser at 390 px').toEqual([]);
    await shot(page, 'projects-2-phone');

    // back to the default by the chooser: A's session again
    await chooser.selectOption(nameA);
    await expect.poll(() => listed(page)).toContain('ALPHA-ASK');
    expect(errors).toEqual([]);
    await page.context().close();
  }, 120_000);
});
