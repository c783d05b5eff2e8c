/**
 * The browser workspace renders Markdown (a model's answer, a run-ended card's summary, a fix run's
 * rationale and PR text), and Markdown is the attacker's text: the model, or a repository it read, writes
 * it. Through the real `keel serve` in Chromium: headings, lists, links and highlighted code render, while
 * raw HTML (script, img onerror, svg onload, iframe, a raw <a>) stays text, links other than http(s) and
 * mailto (javascript: however spelled or escaped, data:, vbscript:, relative, reference-style, autolinks)
 * are not links, images are not loaded (a beacon), and a code fence's language cannot break out of its
 * class attribute. The page's CSP would stop an inline handler anyway: the checks are on what the page
 * built (no such element, no handler attribute) and on what it fetched, not only on flags never set.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { keelHome, model, modelFlags } from '../e2e/harness.js';
import { startServe } from '../e2e/serve-harness.js';
import { gitRepo } from '../helpers/tmp.js';

const CHROMIUM = '/usr/bin/chromium';

/** Every way this text tries to become markup, script or a request; `tag` tells the copies apart. */
function hostile(tag: string): string {
  return [
    `## Heading ${tag}`,
    '',
    `**bold ${tag}** and \`inline code\``,
    '',
    '- item one',
    '- item two',
    '',
    `[docs](https://example.com/docs-${tag}) and [mail](mailto:a@example.com)`,
    '',
    '```ts',
    `const answer: number = 42; // <img src=x onerror="window.pwned='fence-${tag}'">`,
    '```',
    '',
    `<script>window.pwned='script-${tag}'</script>`,
    `<img src=x onerror="window.pwned='img-${tag}'">`,
    `<svg onload="window.pwned='svg-${tag}'"></svg>`,
    `<iframe src="javascript:window.pwned='iframe-${tag}'"></iframe>`,
    `<a href="javascript:window.pwned='raw-${tag}'">raw link</a>`,
    `<details open ontoggle="window.pwned='details-${tag}'">x</details>`,
    '',
    `[js1](javascript:window.pwned='js1-${tag}')`,
    `[js2](JaVaScRiPt:window.pwned='js2-${tag}')`,
    `[js3](java&#115;cript:window.pwned='js3-${tag}')`,
    `[js4](&#x6A;avascript:window.pwned='js4-${tag}')`,
    `[js5](<javascript:window.pwned='js5-${tag}'>)`,
    '[data](data:text/html;base64,PHNjcmlwdD5wYXJlbnQucHduZWQ9MTwvc2NyaXB0Pg==)',
    '[vb](vbscript:msgbox)',
    '[rel](/v1/sessions)',
    `<javascript:window.pwned='auto-${tag}'>`,
    `![beacon](http://127.0.0.2:9/beacon-${tag}.png)`,
    `![img2](javascript:window.pwned='img2-${tag}')`,
    '[ref link][r1]',
    '',
    `[r1]: javascript:window.pwned='ref-${tag}'`,
    '',
    `\`\`\`"><img src=x onerror="window.pwned='info-${tag}'">`,
    'fenced',
    '```',
  ].join('\n');
}

/** In `root`: the Markdown rendered, and nothing hostile built. */
async function rendered(page: Page, root: string, tag: string): Promise<void> {
  const md = page.locator(root);
  await md.first().waitFor({ timeout: 30_000 });
  expect(await md.locator('h2').first().textContent()).toBe(`Heading ${tag}`);
  expect(await md.locator('strong').first().textContent()).toBe(`bold ${tag}`);
  expect(await md.locator('ul > li').count()).toBe(2);
  const docs = md.locator(`a[href="https://example.com/docs-${tag}"]`);
  expect(await docs.getAttribute('rel')).toContain('noopener');
  expect(await docs.getAttribute('target')).toBe('_blank');
  expect(await md.locator('a[href="mailto:a@example.com"]').count()).toBe(1);
  // a highlighted code block, in a monospace font; the markup in it is text
  const code = md.locator('pre code.language-ts');
  expect(await code.locator('.hljs-keyword').first().textContent()).toBe('const');
  expect(
    await code.evaluate(
      (n) =>
        (globalThis as unknown as { getComputedStyle(e: unknown): { fontFamily: string } }).getComputedStyle(
          n,
        ).fontFamily,
    ),
  ).toMatch(/mono/i);
  expect(await code.textContent()).toContain(`<img src=x onerror="window.pwned='fence-${tag}'">`);
  // nothing executable or fetching was built, whatever the spelling
  expect(
    await md.locator('script, img, svg, iframe, object, embed, details, style, form, input').count(),
  ).toBe(0);
  const handlers = await md.evaluateAll((nodes) =>
    nodes.flatMap((n) =>
      [n, ...n.querySelectorAll('*')].flatMap((e) =>
        e.getAttributeNames().filter((a: string) => /^on/i.test(a)),
      ),
    ),
  );
  expect(handlers).toEqual([]);
  const hrefs = await md.locator('a').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
  // an image is a link to it, never loaded
  expect(hrefs).toEqual([
    `https://example.com/docs-${tag}`,
    'mailto:a@example.com',
    `http://127.0.0.2:9/beacon-${tag}.png`,
  ]);
  // what was not rendered stays readable as text
  const text = (await md.first().textContent()) ?? '';
  expect(text).toContain(`<script>window.pwned='script-${tag}'</script>`);
  expect(text).toContain('raw link');
  expect(text).toContain('[js1]');
}

describe.skipIf(!existsSync(CHROMIUM))(
  'Markdown on the web page is rendered, never run (chromium, real keel serve)',
  () => {
    it('renders answers, run-ended summaries and fix reports, and builds nothing hostile from them', async () => {
      const server = await model([{ text: hostile('answer') }]);
      const repo = gitRepo();
      const home = keelHome();
      const db = openDb(join(home, 'keel.db'));
      const log = new EventLog(db);
      // a session that ended on a budget, its summary not the answer above: the run-ended card renders it
      const ended = '20260101-000000-e0e0e0';
      log.createSession({
        id: ended,
        mode: 'ask',
        cwd: repo,
        provider: 'openai',
        model: 'test-model',
        prompt: 'p',
      });
      log.append(ended, 'user_message', { text: 'p' });
      const summary = hostile('summary');
      log.append(ended, 'session_end', {
        code: 'BUDGET_EXCEEDED',
        reason: 'max_rounds',
        summary,
        rounds: 1,
        tokens: { input: 1, output: 1 },
        cost_usd: null,
        files_changed: [],
      });
      log.finishSession(ended, 'BUDGET_EXCEEDED', summary);
      // a fix run whose report was written by the model
      const run = '20260101-000000-f0f0f0';
      log.createSession({
        id: run,
        mode: 'fix',
        cwd: repo,
        provider: 'openai',
        model: 'test-model',
        prompt: 'fix it',
      });
      log.append(run, 'fix_end', { status: 'verified', code: 'COMPLETED', attempts: 1, reason: 'ok' });
      log.finishSession(run, 'COMPLETED', 'verified');
      db.close();
      const runDir = join(home, 'runs', run);
      mkdirSync(runDir, { recursive: true });
      writeFileSync(join(runDir, 'rationale.md'), hostile('rationale'));
      writeFileSync(join(runDir, 'pr.md'), hostile('pr'));

      const s = await startServe({ cwd: repo, home, args: modelFlags(server) });
      const started = await s.api('POST', '/v1/sessions', { prompt: 'answer in markdown' });
      expect(started.status).toBe(201);
      const id = started.body.session_id as string;

      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
      });
      try {
        const page = await browser.newPage();
        const requests: string[] = [];
        page.on('request', (r) => requests.push(r.url()));
        const dialogs: string[] = [];
        page.on('dialog', (d) => {
          dialogs.push(d.message());
          void d.dismiss();
        });
        await page.goto(`http://127.0.0.1:${s.port}/#token=${s.token}`);
        await page.getByRole('heading', { name: 'Sessions' }).waitFor();

        await page.goto(`http://127.0.0.1:${s.port}/#/s/${id}`);
        await page.locator('.msg.end').waitFor({ timeout: 30_000 });
        await rendered(page, '.msg.assistant .md', 'answer');
        mkdirSync(join('test-results', 'web'), { recursive: true });
        await page.screenshot({ path: join('test-results', 'web', 'markdown-answer.png'), fullPage: true });

        // a long code line scrolls inside its block: a narrow window still has no sideways scrolling
        await page.setViewportSize({ width: 400, height: 800 });
        expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(400);
        await page.setViewportSize({ width: 1280, height: 800 });

        await page.goto(`http://127.0.0.1:${s.port}/#/s/${ended}`);
        await rendered(page, '.msg.end .md', 'summary');

        await page.goto(`http://127.0.0.1:${s.port}/#/runs/${run}`);
        await rendered(page, '.prose.md >> nth=0', 'rationale');
        await rendered(page, '.prose.md >> nth=1', 'pr');
        await page.screenshot({ path: join('test-results', 'web', 'markdown-run.png'), fullPage: true });

        // a click on a rejected link goes nowhere: it is not a link
        await page.getByText('[js1]').first().click();
        expect(await page.evaluate('window.pwned')).toBeUndefined();
        expect(dialogs).toEqual([]);
        // the page fetched only from keel serve: no beacon, no frame
        expect(requests.filter((u) => !u.startsWith(`http://127.0.0.1:${s.port}/`))).toEqual([]);
      } finally {
        await browser.close();
      }
    }, 120_000);
  },
);
