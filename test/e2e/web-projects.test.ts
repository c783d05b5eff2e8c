/**
 * Choosing the project in the browser workspace, in Chromium against the real `keel serve --project A
 * --project B` with two real repositories: the header's labelled chooser (shown only when there is a
 * choice), by keyboard, switches the sessions, the files and a new session to B; the choice survives a
 * reload; it works at 390 px and passes axe-core.
 */
import { existsSync, realpathSync } from 'node:fs';
import { basename } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import { keelHome, model, modelFlags, withEventLog } from './harness.js';
import { type Served, startServe } from './serve-harness.js';
import { axe, CHROMIUM, shot, signedInPage } from './web-harness.js';

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
    ]);
    const a = realpathSync(gitRepo({ 'README.md': '# Alpha\n', 'alpha-only.ts': 'export const a = 1;\n' }));
    const b = realpathSync(gitRepo({ 'README.md': '# Beta\n', 'beta-only.ts': 'export const b = 2;\n' }));
    const home = keelHome();
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
