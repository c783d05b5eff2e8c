/**
 * The browser workspace as a person uses it, in Chromium against the real `keel serve`: the project's
 * files in a tree and a read-only viewer (highlighted lines, a Markdown preview, "path:line" in an answer
 * opening the file at that line, a selection inserted into the message box), sessions searched and
 * filtered, a waiting approval shown in the tab's title, the favicon and (once the person opted in) a
 * desktop notification; and the page at phone width, by keyboard alone, and through axe-core.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { keelHome, model, modelFlags } from './harness.js';
import { type Served, startServe } from './serve-harness.js';
import { axe, CHROMIUM, launchChromium, shot, spyOnNotifications } from './web-harness.js';

const APP = [
  "import { join } from 'node:path';",
  '',
  'export function total(xs: number[]): number {',
  '  return xs.reduce((a, b) => a + b, 0);',
  '}',
  `export const LONG = '${'x'.repeat(300)}';`,
  '',
].join('\n');

async function open(): Promise<BrowserContext> {
  // axe is injected as a script tag, which the page's own CSP would refuse
  return (await launchChromium()).newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
}

/** The page scrolls sideways (wider than the viewport). */
function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(
    'document.documentElement.scrollWidth > document.documentElement.clientWidth',
  ) as Promise<boolean>;
}

async function settled(s: Served, id: string, state: string): Promise<void> {
  await expect
    .poll(async () => (await s.api('GET', `/v1/sessions/${id}`)).body.state, { timeout: 30_000 })
    .toBe(state);
}

describe.skipIf(!existsSync(CHROMIUM))(
  'the web workspace: files, search, approvals, access (chromium)',
  () => {
    it('opens a file from a path:line in an answer, previews Markdown, inserts a selection; works at 390 px, by keyboard, and passes axe', async () => {
      const server = await model([
        { text: 'The sum is in src/app.ts:4 (see README.md:1); not example.com:443 or 127.0.0.1:8080.' },
      ]);
      const repo = gitRepo({ 'src/app.ts': APP, 'README.md': '# Demo title\n\n- first point\n' });
      writeFileSync(join(repo, '.env'), 'TOKEN=ENV-SECRET\n');
      // a file's text is the attacker's: shown as text, in the source view and the preview alike
      const evil = '<img src=x onerror="window.pwned=1"></span><script>window.pwned=2</script>\n';
      writeFileSync(
        join(repo, 'evil.ts'),
        `// ${evil}const x = '</span><img src=y onerror="window.pwned=3">';\n`,
      );
      writeFileSync(join(repo, 'evil.md'), `# Evil\n\n${evil}`);
      const s = await startServe({ cwd: repo, home: keelHome(), args: modelFlags(server) });
      const started = await s.api('POST', '/v1/sessions', { prompt: 'EXPLAIN the sum' });
      const id = started.body.session_id as string;
      await settled(s, id, 'completed');

      const context = await open();
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`http://127.0.0.1:${s.port}/#token=${s.token}`);
      await page.getByRole('link', { name: /EXPLAIN the sum/ }).click();
      await page.locator('.msg .text.md').first().waitFor();
      // one project served: nothing to choose, no chooser (web-projects.test.ts: two)
      expect(await page.locator('#project-choice').isHidden()).toBe(true);

      // path:line references are links to the viewer; a host and port is not
      const refs = page.locator('a.file-ref');
      expect(await refs.allTextContents()).toEqual(['src/app.ts:4', 'README.md:1']);
      expect(await page.locator('.msg .text.md').first().textContent()).toContain('127.0.0.1:8080');
      expect(await axe(page), 'a session transcript').toEqual([]);
      await refs.first().click();
      await page.waitForURL(/#\/files\/src\/app\.ts:4$/);
      const line4 = page.locator('pre.code #L4');
      await line4.waitFor();
      expect(await line4.getAttribute('class')).toContain('target');
      expect(await line4.textContent()).toContain('xs.reduce');
      // highlighted (typescript) and numbered; the tree shows the file's folder open, and no .env
      expect(await page.locator('pre.code .hljs-keyword').count()).toBeGreaterThan(0);
      expect(await page.locator('pre.code .ln').count()).toBe(6);
      expect(await page.locator('.file-tree a[aria-current="page"]').textContent()).toBe('app.ts');
      expect(await page.locator('.file-tree').textContent()).not.toContain('.env');
      expect(await axe(page), 'the file viewer').toEqual([]);
      await shot(page, 'files-1-viewer-at-line');

      // a selection of lines 3-4 goes into the message box of the session last open, with where it is from
      await page.evaluate(`{
        const range = document.createRange();
        range.setStart(document.getElementById('L3'), 0);
        const end = document.getElementById('L4');
        range.setEnd(end, end.childNodes.length);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
      }`);
      await page.getByRole('button', { name: 'Insert selection into message' }).click();
      await page.waitForURL(new RegExp(`#/s/${id}$`));
      const box = page.getByLabel('Message');
      await expect
        .poll(() => box.inputValue())
        .toContain('src/app.ts:3-4\n```typescript\nexport function total');
      expect(await box.inputValue()).toContain('xs.reduce');

      // Markdown: a preview, and the source on demand
      await page.goto(`http://127.0.0.1:${s.port}/#/files/README.md`);
      await page.locator('.preview h1').waitFor();
      expect(await page.locator('.preview h1').textContent()).toBe('Demo title');
      expect(await page.locator('pre.code').isHidden()).toBe(true);
      await page.getByRole('button', { name: 'Show source' }).click();
      expect(await page.locator('pre.code #L1').textContent()).toBe('# Demo title\n');

      for (const file of ['evil.ts', 'evil.md']) {
        await page.goto(`http://127.0.0.1:${s.port}/#/files/${file}`);
        await page.locator('.file-path').waitFor();
        await page.locator('pre.code #L1').waitFor({ state: 'attached' });
        expect(await page.locator('.viewer img, .viewer script').count(), file).toBe(0);
        expect(await page.evaluate('window.pwned'), file).toBeUndefined();
      }
      expect(await page.locator('pre.code #L3').textContent()).toContain('<img src=x onerror=');
      expect(await page.locator('.preview').textContent()).toContain('<img src=x onerror=');

      // keyboard only: every stop shows its focus; the tree opens a folder and a file by keys
      await page.goto(`http://127.0.0.1:${s.port}/#/files`);
      await page.locator('.file-tree summary').first().waitFor();
      await page.locator('body').click({ position: { x: 1, y: 1 } });
      let reached = false;
      for (let i = 0; i < 30 && !reached; i++) {
        await page.keyboard.press('Tab');
        const focus = (await page.evaluate(
          '({ text: document.activeElement.textContent.trim(), tag: document.activeElement.tagName, outline: getComputedStyle(document.activeElement).outlineStyle })',
        )) as { text: string; tag: string; outline: string };
        expect(focus.outline, `focus on ${focus.tag} ${focus.text}`).not.toBe('none');
        reached = focus.tag === 'SUMMARY' && focus.text === 'src/';
      }
      expect(reached).toBe(true);
      await page.keyboard.press('Enter');
      // the folder's entries are read when it opens
      await page.locator('.file-tree details[data-dir="src"] a').waitFor();
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement.textContent')).toBe('app.ts');
      await page.keyboard.press('Enter');
      await page.waitForURL(/#\/files\/src\/app\.ts$/);
      await page.locator('pre.code').waitFor();

      // phone width: nothing scrolls sideways on the list, the transcript and the viewer
      await page.setViewportSize({ width: 390, height: 844 });
      for (const hash of ['#/', `#/s/${id}`, '#/files/src/app.ts:4', '#/files/README.md']) {
        await page.goto(`http://127.0.0.1:${s.port}/${hash}`);
        await page.locator('main h1').first().waitFor();
        await page.waitForLoadState('networkidle');
        expect(await scrollsSideways(page), hash).toBe(false);
      }
      await shot(page, 'files-2-phone');
      await page.goto(`http://127.0.0.1:${s.port}/#/`);
      await page.locator('tr[data-session]').first().waitFor();
      expect(await axe(page), 'the sessions list').toEqual([]);
      expect(errors).toEqual([]);
      await context.close();
    }, 120_000);

    it('searches and filters sessions, and shows a waiting approval in the title, the favicon and (opted in) a notification', async () => {
      const server = await model([
        { text: 'explained' },
        {
          tool_calls: [{ name: 'edit_file', arguments: { path: 'a.txt', old_string: 'a', new_string: 'A' } }],
        },
        { text: 'changed' },
      ]);
      const repo = gitRepo({ 'a.txt': 'a\n' });
      const s = await startServe({
        cwd: repo,
        home: keelHome('approvals = "writes"\n'),
        args: modelFlags(server),
      });
      const first = (await s.api('POST', '/v1/sessions', { prompt: 'EXPLAIN the sum' })).body.session_id;
      await settled(s, first, 'completed');

      const context = await open();
      await spyOnNotifications(context);
      const page = await context.newPage();
      await page.goto(`http://127.0.0.1:${s.port}/#token=${s.token}`);
      await page.locator('tr[data-session]').first().waitFor();
      expect(await page.title()).toBe('keel workspace');
      expect(await page.locator('#favicon').getAttribute('data-state')).toBe('idle');

      const second = (await s.api('POST', '/v1/sessions', { prompt: 'CHANGE a.txt', mode: 'edit' })).body
        .session_id;
      await settled(s, second, 'waiting');
      await expect
        .poll(() => page.title(), { timeout: 10_000 })
        .toBe('(1) Approval waiting · keel workspace');
      expect(await page.locator('#favicon').getAttribute('data-state')).toBe('waiting');
      expect(await page.locator('#favicon').getAttribute('href')).toMatch(/^data:image\/svg\+xml,/);
      // not opted in: no notification
      expect(await page.evaluate('window.seen')).toEqual([]);

      // search by words of the first message, filter by state, both, and none matching
      const rows = () =>
        page.locator('tr[data-session]').evaluateAll((trs) => trs.map((t) => t.getAttribute('data-session')));
      await expect.poll(rows, { timeout: 10_000 }).toHaveLength(2);
      await page.getByLabel('Search sessions').fill('explain');
      await expect.poll(rows).toEqual([first]);
      await page.getByLabel('Search sessions').fill('');
      await page.getByLabel('State').selectOption('waiting');
      await expect.poll(rows).toEqual([second]);
      await page.getByLabel('Search sessions').fill('explain');
      await expect.poll(() => page.locator('main').textContent()).toContain('No session matches.');
      await page.getByLabel('State').selectOption('');
      await expect.poll(rows).toEqual([first]);
      await shot(page, 'files-3-search');

      // the person opts in: the waiting approval is told once
      await page.getByRole('button', { name: 'Notify me of approvals' }).click();
      await expect.poll(() => page.getByRole('button', { name: 'Notifications on' }).count()).toBe(1);
      await expect
        .poll(() => page.evaluate('window.seen'), { timeout: 10_000 })
        .toEqual(['keel: approval waiting: CHANGE a.txt']);

      // answered: the title and the icon are back
      await page.goto(`http://127.0.0.1:${s.port}/#/s/${second}`);
      await page.locator('article.approval').getByRole('button', { name: 'Allow' }).click();
      await settled(s, second, 'completed');
      await expect.poll(() => page.title(), { timeout: 10_000 }).toBe('keel workspace');
      expect(await page.locator('#favicon').getAttribute('data-state')).toBe('idle');
      expect(await page.evaluate('window.seen')).toHaveLength(1);
      await context.close();
    }, 120_000);
  },
);
