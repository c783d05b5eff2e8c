/**
 * The browser workspace in a real browser (Debian's chromium through playwright-core) against the real
 * `keel serve` and a scripted model: start a session from the page, watch it stream, approve a gated
 * write, open the diff, read it on a narrow window, and keep following the session across a restart.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { baseEnv, KEEL_BIN, keelHome, model } from './harness.js';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(process.cwd(), 'test-results', 'web');
const TOKEN = 'web-test-token-0123456789';

if (!existsSync(CHROMIUM))
  console.warn(`web.test.ts skipped: no browser at ${CHROMIUM} (apt-get install chromium)`);

interface Served {
  child: ChildProcess;
  port: number;
  stderr: () => string;
  /** SIGTERM, then SIGKILL after 5 s: how it ended. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const children: ChildProcess[] = [];
let browser: Browser | undefined;
afterAll(async () => {
  await browser?.close();
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

/** Start `keel serve --json` and wait for its one line `{url, port, token, projects}` on stdout. */
function serve(
  cwd: string,
  home: string,
  env: Record<string, string>,
  listen = '127.0.0.1:0',
): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KEEL_BIN, 'serve', '--listen', listen, '--json'], {
      cwd,
      env: { ...baseEnv(home), KEEL_SERVE_TOKEN: TOKEN, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`keel serve did not start in 20 s: ${err}`)), 20_000);
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`keel serve exited ${code}: ${err}`));
    });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n')[0];
      if (!out.includes('\n') || !line) return;
      clearTimeout(timer);
      const { port } = JSON.parse(line) as { port: number };
      resolve({
        child,
        port,
        stderr: () => err,
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null || child.signalCode !== null)
              return done({ code: child.exitCode, signal: child.signalCode });
            child.once('close', (code, signal) => done({ code, signal }));
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 5000).unref();
          }),
      });
    });
  });
}

async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

describe.skipIf(!existsSync(CHROMIUM))('browser workspace (chromium, real keel serve)', () => {
  it('starts a session, streams it, approves a write, shows the diff, fits 400 px, reconnects after a restart', async () => {
    const repo = gitRepo({ 'src/app.js': 'export const answer = 41;\n' });
    const home = keelHome('approvals = "writes"\n');
    const server = await model([
      {
        reasoning: 'The constant is in src/app.js.',
        text: 'I will change 41 to 42.',
        tool_calls: [
          { name: 'edit_file', arguments: { path: 'src/app.js', old_string: '41', new_string: '42' } },
        ],
        chunk_size: 4,
        chunk_delay_ms: 20,
      },
      // hostile text: must show as text, never become markup
      { text: 'Done: <img src=x onerror="window.pwned=1"><b>42</b>' },
      // the second turn's answer is cut at the output limit each time keel asks for the rest
      {
        text: 'Second turn after the restart.',
        finish: 'length',
        expect: { last_user_contains: 'one more' },
      },
      { text: 'Second turn after the restart.', finish: 'length' },
      { text: 'Second turn after the restart.', finish: 'length' },
    ]);
    const env = { KEEL_PROVIDER: 'openai', KEEL_BASE_URL: server.url, KEEL_MODEL: 'test-model' };
    let keelServe = await serve(repo, home, env);
    const { port } = keelServe;

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`http://127.0.0.1:${port}/#token=${TOKEN}`);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    // the token leaves the address bar and lives in sessionStorage
    expect(page.url()).not.toContain(TOKEN);
    expect(await page.evaluate('sessionStorage.getItem("keel.token")')).toBe(TOKEN);

    // start a session from the page, with the keyboard: Enter submits
    await page.getByRole('link', { name: 'New session' }).first().click();
    await page.getByLabel('Mode').selectOption('edit');
    await page.getByLabel('Prompt').fill('make the answer 42');
    await page.getByLabel('Prompt').press('Enter');
    await page.waitForURL(/#\/s\/[\w.-]+$/);
    const sessionHash = new URL(page.url()).hash;

    // the streamed answer, the reasoning collapsed, and the gated write waiting for a person
    const approval = page.locator('article.approval');
    await approval.waitFor({ timeout: 30_000 });
    await expect
      .poll(() => page.locator('.msg.assistant .text').first().textContent())
      .toContain('I will change 41 to 42.');
    const reasoning = page.locator('.msg.assistant details.thinking').first();
    expect(await reasoning.getAttribute('open')).toBeNull();
    expect(await reasoning.textContent()).toContain('The constant is in src/app.js.');
    expect(await approval.textContent()).toContain('edit_file');
    expect(await approval.locator('.diff .add').allTextContents()).toContain('+export const answer = 42;\n');
    // nothing lands before the answer
    expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).toBe('export const answer = 41;\n');
    await shot(page, '1-approval');

    await approval.getByRole('button', { name: 'Allow' }).click();
    const end = page.locator('.msg.end');
    await end.waitFor({ timeout: 30_000 });
    expect(await end.textContent()).toContain('COMPLETED');
    // the run's summary is its last answer, shown once (not again on the run-ended card)
    expect(await end.locator('.text').count()).toBe(0);
    expect(readFileSync(join(repo, 'src/app.js'), 'utf8')).toBe('export const answer = 42;\n');
    expect(await approval.count()).toBe(0);
    const call = page.locator('li.call[data-call]').first();
    expect(await call.locator('.decision').textContent()).toContain('allowed');
    expect(await call.locator('.outcome').textContent()).toContain('+1 −1');
    // the model's markup arrived as text
    const last = page.locator('.msg.assistant .text').last();
    expect(await last.textContent()).toBe('Done: <img src=x onerror="window.pwned=1"><b>42</b>');
    expect(await page.locator('.transcript img, .transcript b').count()).toBe(0);
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    await shot(page, '2-completed');

    // the session list shows it completed, with mode and cost
    await page.getByRole('link', { name: 'Sessions' }).click();
    const row = page.locator('tr[data-session]').first();
    await expect.poll(() => row.getAttribute('data-state')).toBe('completed');
    expect(await row.textContent()).toContain('edit');

    // a narrow window: no sideways scrolling, the transcript still readable
    await page.setViewportSize({ width: 400, height: 800 });
    await page.goto(`http://127.0.0.1:${port}/${sessionHash}`);
    await page.locator('.msg.end').waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(400);
    await shot(page, '4-narrow');
    await page.setViewportSize({ width: 1280, height: 800 });

    // the server restarts on the same port: the page says so, reconnects, and follows the next turn;
    // the page's open stream does not keep the server from stopping on SIGTERM
    expect(await keelServe.stop()).toEqual({ code: 0, signal: null });
    await expect
      .poll(() => page.locator('#conn').textContent(), { timeout: 15_000 })
      .toContain('reconnecting');
    const alerts = () => page.getByRole('alert').allTextContents();
    await expect
      .poll(async () => (await alerts()).join(' '), { timeout: 15_000 })
      .toContain('cannot reach keel serve');
    keelServe = await serve(repo, home, env, `127.0.0.1:${port}`);
    await expect.poll(() => page.locator('#conn').textContent(), { timeout: 20_000 }).toBe('reconnected');
    // once the server answers again, the page no longer says it cannot reach it
    await expect
      .poll(async () => (await alerts()).join(' '), { timeout: 15_000 })
      .not.toContain('cannot reach');
    // the replay after reconnecting did not repeat what the page already had
    expect(await page.locator('.msg.user').count()).toBe(1);
    expect(await page.locator('.msg.end').count()).toBe(1);
    await page.getByLabel('Message').fill('one more');
    await page.getByLabel('Message').press('Enter');
    await expect
      .poll(() => page.locator('.msg.assistant .text').last().textContent(), { timeout: 30_000 })
      .toBe('Second turn after the restart.');
    expect(await page.locator('.msg.user').count()).toBe(2);
    // the run-ended card says the answer was cut, and only for the turn whose answer was
    const cut = page.locator('.msg.end .cut');
    await cut.waitFor({ timeout: 30_000 });
    expect(await cut.textContent()).toContain('The answer was cut at the output limit (max_output_tokens)');
    expect(await page.locator('.msg.end').count()).toBe(2);
    expect(await cut.count()).toBe(1);
    await shot(page, '5-after-restart');

    // the diff viewer (last: it needs GET /v1/sessions/:id/diff)
    await page.goto(`http://127.0.0.1:${port}/${sessionHash}`);
    await page.getByRole('link', { name: 'Diff' }).first().click();
    await page.locator('.file-diff').first().waitFor();
    expect(await page.locator('.file-diff h2').first().textContent()).toBe('src/app.js');
    expect(await page.locator('.file-diff .add').allTextContents()).toContain('+export const answer = 42;\n');
    expect(await page.locator('.file-diff .del').allTextContents()).toContain('-export const answer = 41;\n');
    await shot(page, '3-diff');

    const paint = await page.evaluate(
      () => performance.getEntriesByName('keel:first-transcript-paint')[0]?.startTime,
    );
    expect(paint).toBeGreaterThan(0);
    expect(pageErrors).toEqual([]);

    // a tab without the token (a fresh context, nothing in its sessionStorage) gets the page, not the sessions
    const stranger = await (await browser.newContext()).newPage();
    await stranger.goto(`http://127.0.0.1:${port}/`);
    await expect.poll(() => stranger.locator('#conn').textContent()).toContain('no token');
    await expect
      .poll(() => stranger.getByRole('alert').first().textContent())
      .toContain('open the address keel serve printed');
    expect(await stranger.locator('table.sessions').count()).toBe(0);
    await keelServe.stop();
  }, 180_000);
});
