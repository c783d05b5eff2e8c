/**
 * The browser workspace as a person meets it: Chromium (one per test file, closed after its tests) on the
 * real `keel serve`, a page signed in with the server's token that records its errors, axe-core's serious
 * findings, and screenshots under test-results/web.
 */
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  chromium,
  type Page,
} from 'playwright-core';
import { afterAll } from 'vitest';
import type { Served } from './serve-harness.js';

/** Where the browser is; without it the browser tests skip (`describe.skipIf(!existsSync(CHROMIUM))`). */
export const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(process.cwd(), 'test-results', 'web');
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let browser: Browser | undefined;
afterAll(async () => {
  await browser?.close();
  browser = undefined;
});

/** The test file's Chromium, launched on first use. */
export async function launchChromium(): Promise<Browser> {
  browser ??= await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
  return browser;
}

/**
 * A new page in a context of its own, signed in to `keel serve` by the token in the URL's fragment, and the
 * errors it throws. The default context bypasses the page's CSP: axe is injected as a script tag.
 */
export async function signedInPage(
  s: Pick<Served, 'port' | 'token'>,
  options: BrowserContextOptions = { viewport: { width: 1280, height: 900 }, bypassCSP: true },
): Promise<{ page: Page; errors: string[] }> {
  const context = await (await launchChromium()).newContext(options);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${s.port}/#token=${s.token}`);
  return { page, errors };
}

/** Serious and critical axe-core violations of the page as it is now. */
export async function axe(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const violations = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)",
  )) as Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** A full-page screenshot at test-results/web/NAME.png. */
export async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/**
 * Notifications allowed in the context, and each one the page makes kept as it is made (the real
 * Notification still runs): `window.seen` holds each one's "title: body", `window.notes[i].note` the
 * notification itself, so its click can be played.
 */
export async function spyOnNotifications(context: BrowserContext): Promise<void> {
  await context.grantPermissions(['notifications']);
  await context.addInitScript(`{
    const Real = window.Notification;
    window.seen = [];
    window.notes = [];
    const Spy = function (title, opts) {
      const note = new Real(title, opts);
      const text = title + ': ' + ((opts && opts.body) || '');
      window.seen.push(text);
      window.notes.push({ text, note });
      return note;
    };
    Object.defineProperty(Spy, 'permission', { get: () => Real.permission });
    Spy.requestPermission = Real.requestPermission.bind(Real);
    window.Notification = Spy;
  }`);
}
