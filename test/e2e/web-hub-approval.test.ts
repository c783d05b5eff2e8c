/**
 * A workflow's approval stage decided in the browser workspace, in Chromium at phone width (390 px): a
 * GitHub-signed webhook starts a run on the real `keel hub start`, the run parks at its approval stage,
 * the Hub page of the real `keel serve` (same KEEL_HOME, so the same store and audit key) shows the
 * decision, a person types a reason and clicks Approve, and the next stage's request reaches its agent.
 * The decision is a sealed event naming keel serve's user, and the run's chain still verifies.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { keelHome } from './harness.js';
import { githubWebhook, HUB_ENV, projectWithAgents, startHub, workflowProject } from './hub-harness.js';
import { startServe } from './serve-harness.js';

const CHROMIUM = '/usr/bin/chromium';
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

const GATED = `version: 1
trigger: {source: github, event: pull_request, secret_env: KEEL_WH_GITHUB}
stages:
  - {id: sign-off, kind: approval, prompt: "Ship PR {{pull_request.number}}?"}
  - {id: ship, kind: agent, agent: shipper, mode: ask}
`;

let browser: Browser | undefined;
afterAll(async () => {
  await browser?.close();
});

async function axe(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const violations = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)",
  )) as Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

describe.skipIf(!existsSync(CHROMIUM))('the Hub page decides an approval stage (chromium, 390 px)', () => {
  it('a person approves a parked stage on the page and the next stage runs', async () => {
    const home = keelHome('hub_project = "demo"\n');
    const cwd = workflowProject(home, { gate: GATED });
    const hub = await startHub({ home, cwd, env: HUB_ENV, args: ['--workflow-project', 'demo'] });
    const { keys } = await projectWithAgents(hub, 'demo', 'shipper');
    const res = await githubWebhook(hub, 'gate', { action: 'opened', pull_request: { number: 9 } });
    expect(res.status).toBe(202);
    const { run_id: runId } = (await res.json()) as { run_id: string };

    const s = await startServe({ cwd, home });
    browser ??= await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`http://127.0.0.1:${s.port}/#token=${s.token}`);
    await page.getByRole('link', { name: 'Hub' }).click();
    await page.getByRole('link', { name: runId }).click();

    const form = page.locator('section[data-approval="sign-off"]');
    await form.waitFor();
    expect(await page.locator('li[data-stage="sign-off"]').textContent()).toContain(
      'waits for a person to approve',
    );
    expect(await axe(page), 'the run page with its decision at 390 px').toEqual([]);
    await form.getByLabel('Reason').fill('checked the diff <b>ok</b>');
    // a refresh of the page's data keeps what is typed
    await page.waitForTimeout(3500);
    expect(await form.getByLabel('Reason').inputValue()).toBe('checked the diff <b>ok</b>');
    await form.getByRole('button', { name: 'Approve' }).click();
    const stage = page.locator('li[data-stage="sign-off"]');
    await stage.filter({ hasText: 'approved by' }).waitFor();
    expect(await stage.textContent()).toMatch(
      /done · approved by keel serve \(user [^)]+\): checked the diff <b>ok<\/b>/,
    );
    expect(await page.locator('main b').count()).toBe(0);
    await page.locator('section[data-approval]').waitFor({ state: 'detached' });

    // the hub's side: the next stage asked its agent, the decision is sealed, the chain verifies
    const shown = JSON.parse((await hub.cli(['runs', 'show', runId, '--json'])).stdout);
    expect(shown.stages.map((x: { state: string }) => x.state)).toEqual(['done', 'active']);
    expect(shown.events.find((e: { type: string }) => e.type === 'stage_approved').data).toMatchObject({
      decision: 'approve',
      reason: 'checked the diff <b>ok</b>',
    });
    const inbox = (await hub.api('GET', '/v1/inbox', keys.shipper)).body.messages;
    expect(inbox.map((m: { body: string }) => JSON.parse(m.body).stage)).toEqual(['ship']);
    const verified = await hub.cli(['runs', 'verify', runId]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    expect(errors).toEqual([]);
  }, 120_000);
});
