/**
 * The hub and the routing tiers in the browser workspace, in Chromium at phone width (390 px) against
 * the real `keel serve`, read from the team store (the default SQLite keel.db): a batch run's calls and
 * cost per routing tier as charts with their values as text; the hub project the user's config names,
 * with its agents online and their roles, its messages (a body of markup shown as text) and a workflow
 * run's stages, quorum evidence and signals. axe-core finds nothing serious on either page.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { claimAndCall, createBatch, finishTask, seedStore } from '../helpers/batch-seed.js';
import { seedHub, seedWorkflowRun, sendMessage } from '../helpers/hub-seed.js';
import { gitRepo } from '../helpers/tmp.js';
import { keelHome } from './harness.js';
import { startServe } from './serve-harness.js';
import { axe, CHROMIUM, shot, signedInPage } from './web-harness.js';

describe.skipIf(!existsSync(CHROMIUM))(
  'the web workspace: routing tiers and the hub (chromium, 390 px)',
  () => {
    it("charts a batch's calls and cost per tier, and shows the hub's agents, messages, a run's stages, evidence and signals", async () => {
      const home = keelHome('hub_project = "team"\n');
      const project = gitRepo({ 'README.md': '# p\n' });
      const seed = await seedStore(join(home, 'keel.db'));
      await createBatch(seed, 'nightly', { 'mean-bug': project, 'sum-bug': project, 'max-bug': project });
      await finishTask(seed, await claimAndCall(seed, 'nightly', 3000, 0.001, 'small'), 'done');
      await claimAndCall(seed, 'nightly', 2000, 0.003, 'large');
      await claimAndCall(seed, 'nightly', 1000, 0.001, 'small');
      const team = await seedHub(seed.store, 'team', { alice: 'reviewer', bob: 'builder', carol: 'tester' });
      await seed.store.run("UPDATE hub_agents SET last_seen = 0 WHERE name = 'carol'");
      const markup = '<img src=x onerror="window.pwned=1"><b>bold</b>';
      const m1 = await sendMessage(team, 'alice', 'bob', markup);
      const agent = (n: string) => ({ id: team.agents.get(n)?.agentId as string, name: n });
      await seedWorkflowRun(
        seed.store,
        'run-1',
        [agent('alice'), agent('bob')],
        Date.parse('2026-12-05T04:00:00Z'),
      );
      await seed.store.close();

      const s = await startServe({ cwd: project, home });
      const { page, errors } = await signedInPage(s, {
        viewport: { width: 390, height: 844 },
        bypassCSP: true,
      });

      // the tiers' share of calls and of cost, values and shares as text
      await page.goto(`http://127.0.0.1:${s.port}/#/batches/nightly`);
      const calls = page.getByRole('img', { name: 'Calls by routing tier' });
      await calls.waitFor();
      expect(await calls.locator('.group .label').allTextContents()).toEqual(['small', 'large']);
      expect(await calls.locator('.bar .value').allTextContents()).toEqual(['2 (67%)', '1 (33%)']);
      const cost = page.getByRole('img', { name: 'Cost by routing tier' });
      expect(await cost.locator('.bar .value').allTextContents()).toEqual(['$0.0020 (40%)', '$0.0030 (60%)']);
      expect(await cost.evaluate((svg) => svg.querySelector('desc')?.textContent)).toBe(
        'small: $0.0020 (40%); large: $0.0030 (60%)',
      );
      expect(await axe(page), 'the batch page at 390 px').toEqual([]);
      await shot(page, 'tiers-390');

      // the hub: agents and presence, messages as text, the workflow run
      await page.getByRole('link', { name: 'Hub' }).click();
      await page.getByRole('heading', { name: 'Agents (2 of 3 online)' }).waitFor();
      const agents = await page
        .locator('tr[data-agent]')
        .evaluateAll((trs) =>
          trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent)),
        );
      expect(agents).toEqual([
        ['alice', 'reviewer', 'online'],
        ['bob', 'builder', 'online'],
        ['carol', 'tester', 'offline'],
      ]);
      const message = page.locator(`tr[data-message="${m1}"] td`);
      expect((await message.allTextContents()).slice(1)).toEqual(['alice', 'bob', 'queued', markup]);
      expect(await page.locator('main img, main b').count()).toBe(0);
      expect(await page.evaluate('typeof window.pwned')).toBe('undefined');
      expect(await axe(page), 'the hub page at 390 px').toEqual([]);
      await shot(page, 'hub-390');

      await page.getByRole('link', { name: 'run-1' }).click();
      await page.locator('li[data-stage="review"]').waitFor();
      expect(
        await page
          .locator('li[data-stage]')
          .evaluateAll((lis) => lis.map((li) => li.getAttribute('data-stage'))),
      ).toEqual(['review', 'deploy']);
      expect(await page.locator('li[data-stage="review"]').textContent()).toContain(
        'quorum done · 2 replies of 2 needed',
      );
      const evidence = await page
        .locator('tr[data-evidence]')
        .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
      expect(evidence).toEqual([
        ['alice', 'req-run-1-0', 'rep-run-1-0', '000000000000', 'f0f0f0f0f0f0'],
        ['bob', 'req-run-1-1', 'rep-run-1-1', '111111111111', 'f1f1f1f1f1f1'],
      ]);
      expect(await page.locator('li[data-stage="deploy"]').textContent()).toContain(
        'waits for signal deployed',
      );
      expect((await page.locator('tr[data-signal="sig-run-1"] td').allTextContents()).slice(0, 3)).toEqual([
        'sig-run-1',
        'deployed',
        'cccccccccccc',
      ]);
      expect(await axe(page), 'the workflow run page at 390 px').toEqual([]);
      await shot(page, 'hub-run-390');
      expect(errors).toEqual([]);
    }, 120_000);
  },
);
