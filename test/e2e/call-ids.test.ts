/**
 * A call's identity is keel's, never the provider's. Three ways a provider repeats ids from one answer
 * to the next (an OpenAI-compatible server sending `call_0` every round, Ollama's native API numbering
 * afresh, calls written as text recovered as `recovered_N`): one chat session each, with two calls in
 * one answer and an approved edit in the next, read by every face live and replayed. Each call shows
 * once, in order, with its own outcome and its own diff.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import { openDb } from '../../src/store/db.js';
import { gitRepo } from '../helpers/tmp.js';
import {
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  requestMessages,
} from './harness.js';
import { Pane } from './pane.js';
import { readStream, startServe } from './serve-harness.js';

const CHROMIUM = '/usr/bin/chromium';
const READY = /ctx \d/;
const TOOLS = ['list_dir', 'read_file', 'edit_file'];

const native = (calls: Array<{ name: string; arguments: Record<string, unknown> }>): ScriptTurn => ({
  tool_calls: calls,
});
const written = (calls: Array<{ name: string; arguments: Record<string, unknown> }>): ScriptTurn => ({
  text: calls.map((c) => `<tool_call>${JSON.stringify(c)}</tool_call>`).join('\n'),
});

const PATTERNS = [
  { name: 'OpenAI-compatible server sending call_0 every round', wire: 'openai', turn: native },
  { name: "Ollama's native API numbering calls afresh", wire: 'ollama', turn: native },
  { name: 'calls written as text (recovered_N)', wire: 'openai', turn: written },
] as const;

let browser: Browser | undefined;
afterAll(async () => {
  await browser?.close();
});

/** Where each of `words` first shows in `text`, and how often: every one once, in this order. */
function onceInOrder(text: string, words: string[]): void {
  const at = words.map((w) => text.indexOf(w));
  for (const [i, w] of words.entries()) {
    expect.soft(at[i], `${w} shows in:\n${text}`).toBeGreaterThanOrEqual(0);
    expect.soft(text.split(w).length - 1, `${w} shows once in:\n${text}`).toBe(1);
  }
  expect
    .soft(
      [...at].sort((a, b) => a - b),
      `the calls in order in:\n${text}`,
    )
    .toEqual(at);
}

describe('every face shows every call once, in order, with its own outcome and diff', () => {
  for (const pattern of PATTERNS) {
    it(`${pattern.name}`, async () => {
      const server = await model([
        pattern.turn([
          { name: 'list_dir', arguments: { path: '.' } },
          { name: 'read_file', arguments: { path: 'a.txt' } },
        ]),
        pattern.turn([
          { name: 'edit_file', arguments: { path: 'a.txt', old_string: 'one', new_string: 'two' } },
        ]),
        { text: 'All done.' },
      ]);
      const flags =
        pattern.wire === 'ollama'
          ? ['--provider', 'ollama', '--base-url', server.ollamaUrl, '--model', 'test-model']
          : ['--provider', 'openai', '--base-url', server.url, '--model', 'test-model'];
      const repo = gitRepo({ 'a.txt': 'one\n' });
      const home = keelHome('approvals = "writes"\n');

      // live, in the terminal: the edit is asked about and approved
      const live = Pane.start(['chat', '--mode', 'edit', '--context-window', '32000', ...flags], {
        cwd: repo,
        home,
      });
      await live.waitFor(READY);
      live.type('change one to two', 'Enter');
      await live.waitFor('y yes · n no', 30_000);
      live.type('y', 'Enter');
      await live.waitFor('All done.', 30_000);
      expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('two\n');
      const liveScreen = live.screen();
      onceInOrder(liveScreen, ['list_dir .', 'read_file a.txt', 'edit_file a.txt']);
      expect.soft(liveScreen).toContain('+two');
      live.type('/exit', 'Enter');
      await live.waitFor('[keel exited 0]');

      // the log: keel's own ids, each once, the provider's kept for the wire only
      const events = lastSessionEvents(home);
      const recorded = events
        .filter((e) => e.type === 'assistant_message')
        .flatMap((e) => e.data.tool_calls as Array<{ id: string; name: string }>);
      expect.soft(recorded.map((c) => c.name)).toEqual(TOOLS);
      expect.soft(new Set(recorded.map((c) => c.id)).size).toBe(3);

      // replayed in the terminal: `keel chat --continue`
      const again = Pane.start(['chat', '--continue', '--context-window', '32000', ...flags], {
        cwd: repo,
        home,
      });
      const replayed = await again.waitFor(READY);
      onceInOrder(replayed, ['list_dir .', 'read_file a.txt', 'edit_file a.txt']);
      expect.soft(replayed).toContain('+two');
      again.kill();

      // `keel sessions show --json`: every call once, its result under its own id, the diff on the edit's
      const show = await keel(['sessions', 'show', String(events[0]?.session_id), '--json'], {
        cwd: repo,
        home,
      });
      expect(show.code).toBe(0);
      const shown = JSON.parse(show.stdout) as {
        events: Array<{ type: string; data: Record<string, unknown> }>;
      };
      const byId = (list: typeof shown.events) => {
        const calls = list
          .filter((e) => e.type === 'assistant_message')
          .flatMap((e) => e.data.tool_calls as Array<{ id: string; name: string }>);
        const results = list.filter((e) => e.type === 'tool_result');
        return calls.map((c) => {
          const own = results.filter((r) => r.data.call_id === c.id);
          return { tool: c.name, results: own.map((r) => r.data.tool), diff: own[0]?.data.diff };
        });
      };
      const calls = byId(shown.events);
      expect.soft(calls.map((c) => [c.tool, c.results])).toEqual(TOOLS.map((t) => [t, [t]]));
      expect.soft(String(calls[2]?.diff)).toContain('+two');
      expect.soft(calls[0]?.diff).toBeUndefined();

      // `keel serve`: the SSE stream replays the session the same way
      const served = await startServe({ cwd: repo, home });
      const sessionId = String(events[0]?.session_id);
      const frames = await readStream(
        `http://127.0.0.1:${served.port}/v1/sessions/${sessionId}/events`,
        (f) => f.event === 'session_end' || f.data?.type === 'session_end',
        { token: served.token },
      );
      const streamed = frames
        .filter((f) => f.data && typeof f.data === 'object' && 'type' in f.data)
        .map((f) => ({
          type: String(f.data.type),
          data: (f.data.data ?? f.data) as Record<string, unknown>,
        }));
      expect.soft(byId(streamed).map((c) => [c.tool, c.results])).toEqual(TOOLS.map((t) => [t, [t]]));

      // the web page in Chromium: one card per call, in order, the diff on the edit's card
      if (existsSync(CHROMIUM)) {
        browser ??= await chromium.launch({
          executablePath: CHROMIUM,
          headless: true,
          args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
        });
        const page = await browser.newPage();
        await page.goto(`http://127.0.0.1:${served.port}/#token=${served.token}`);
        await page.getByRole('heading', { name: 'Sessions' }).waitFor();
        await page.goto(`http://127.0.0.1:${served.port}/#/s/${sessionId}`);
        await page.locator('.msg.end').waitFor();
        const cards = page.locator('li.call');
        expect.soft(await cards.locator('code.tool').allTextContents()).toEqual(TOOLS);
        expect.soft(await cards.nth(0).locator('.diff').count()).toBe(0);
        expect.soft(await cards.nth(2).locator('.diff .add').allTextContents()).toContain('+two\n');
        await page.close();
      }
    }, 120_000);
  }

  it('a log written before calls had keel ids (call_0 in two answers) replays with two calls, and resumes with the ids the server gave', async () => {
    const server = await model([
      native([
        { name: 'list_dir', arguments: { path: '.' } },
        { name: 'read_file', arguments: { path: 'a.txt' } },
      ]),
      native([{ name: 'edit_file', arguments: { path: 'a.txt', old_string: 'one', new_string: 'two' } }]),
      { text: 'All done.' },
      { text: 'Still here.', expect: { last_user_contains: 'and now' } },
    ]);
    const repo = gitRepo({ 'a.txt': 'one\n' });
    const home = keelHome();
    const run = await keel(['edit', ...modelFlags(server), 'change one to two'], { cwd: repo, home });
    expect(run.code).toBe(0);
    // write the log back as older versions did: the provider's ids, call_0 twice
    const events = lastSessionEvents(home);
    const wire = new Map<string, string>();
    const db = openDb(join(home, 'keel.db'));
    const update = db.prepare('UPDATE events SET data = ? WHERE session_id = ? AND seq = ?');
    for (const e of events) {
      const d = { ...e.data };
      if (e.type === 'assistant_message')
        d.tool_calls = (d.tool_calls as Array<{ id: string; wire_id?: string }>).map(({ wire_id, ...c }) => {
          wire.set(c.id, String(wire_id));
          return { ...c, id: String(wire_id) };
        });
      else if (typeof d.call_id === 'string') d.call_id = wire.get(d.call_id);
      update.run(JSON.stringify(d), e.session_id, e.seq);
    }
    db.close();
    expect([...wire.values()]).toEqual(['call_0', 'call_1', 'call_0']);

    const show = await keel(['sessions', 'show', String(events[0]?.session_id), '--json'], {
      cwd: repo,
      home,
    });
    const shown = JSON.parse(show.stdout) as {
      events: Array<{ type: string; data: Record<string, unknown> }>;
    };
    const calls = shown.events
      .filter((e) => e.type === 'assistant_message')
      .flatMap((e) => e.data.tool_calls as Array<{ id: string; name: string }>);
    expect(new Set(calls.map((c) => c.id)).size).toBe(3);
    const results = shown.events.filter((e) => e.type === 'tool_result');
    expect(calls.map((c) => results.filter((r) => r.data.call_id === c.id).map((r) => r.data.tool))).toEqual(
      TOOLS.map((t) => [t]),
    );

    const pane = Pane.start(['chat', '--continue', '--context-window', '32000', ...modelFlags(server)], {
      cwd: repo,
      home,
    });
    onceInOrder(await pane.waitFor(READY), ['list_dir .', 'read_file a.txt', 'edit_file a.txt']);
    pane.type('and now', 'Enter');
    await pane.waitFor('Still here.', 30_000);
    // the server gets its own ids back, each result under the id of its call
    const sent = requestMessages(chatBodies(server).at(-1)) as Array<{
      role: string;
      tool_calls?: Array<{ id: string }>;
      tool_call_id?: string;
    }>;
    expect(sent.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id))).toEqual([
      'call_0',
      'call_1',
      'call_0',
    ]);
    expect(sent.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual([
      'call_0',
      'call_1',
      'call_0',
    ]);
  }, 120_000);
});
