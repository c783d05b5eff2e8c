/**
 * A chat turn is its own: what it observes for memory, what the loop detector counts, and how its answer
 * ended. And every request carries the configured temperature. The real binary, a scripted model.
 */
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import {
  chatBodies,
  ends,
  eventually,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
} from './harness.js';
import { Pane, send } from './pane.js';
import { readStream, startServe } from './serve-harness.js';

const READY = /ctx \d/;

describe('a chat turn is its own', () => {
  it('observes only what it did (none when cancelled, none from a read-only turn), starts the loop detector over at each message, and says when an answer was cut', async () => {
    const read = { name: 'read_file', arguments: { path: 'notes.txt' } };
    const server = await model([
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'notes.txt', content: 'one\n' } }] },
      { text: 'wrote the notes' },
      { tool_calls: [{ id: 'r1', ...read }] },
      { text: 'first look' },
      { tool_calls: [{ id: 'r2', ...read }] },
      { text: 'second look' },
      { tool_calls: [{ id: 'r3', ...read }] },
      { text: 'third look' },
      ...[1, 2, 3].map(() => ({ text: 'It all began when', finish: 'length' as const })),
      { tool_calls: [{ id: 'w2', name: 'write_file', arguments: { path: 'other.txt', content: 'two\n' } }] },
      { hang: true },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    await send(pane, 'write the notes');
    await pane.waitFor('wrote the notes');
    // three questions about the same file, read-only, each its own turn
    pane.type('/mode ask', 'Enter');
    await pane.waitFor(/ask · ctx/);
    await send(pane, 'look at the notes');
    await pane.waitFor('first look');
    await send(pane, 'look again');
    await pane.waitFor('second look');
    await send(pane, 'one more look');
    await pane.waitFor(/third look|LOOP_DETECTED/);
    expect(ends(lastSessionEvents(home))).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED']);
    // an answer cut at the output limit (keel asks twice for the rest): the turn says so
    await send(pane, 'tell me everything');
    await pane.waitFor('the answer was cut at the output limit (max_output_tokens)');
    // a turn that changes a file and is then stopped
    pane.type('/mode edit', 'Enter');
    await pane.waitFor(/edit · ctx/);
    await send(pane, 'write another file');
    await eventually(() => lastSessionEvents(home).filter((e) => e.type === 'tool_result').length >= 5);
    await eventually(() => chatBodies(server).length >= 13);
    pane.keys('C-c');
    await pane.waitFor(/CANCELLED/);
    pane.keys('C-c');
    await pane.waitFor('[keel exited');

    expect(ends(lastSessionEvents(home))).toEqual([
      'COMPLETED',
      'COMPLETED',
      'COMPLETED',
      'COMPLETED',
      'COMPLETED',
      'CANCELLED',
    ]);
    const listed = await keel(['memory', 'list', '--json'], { cwd: repo, home });
    expect(listed.code).toBe(0);
    const items = (JSON.parse(listed.stdout) as { items: Array<{ kind: string; text: string }> }).items;
    // the first turn's change, once; the read-only turns and the cancelled one recorded nothing
    expect(items.filter((i) => i.kind === 'file_changed').map((i) => i.text)).toEqual([
      'Files changed: "notes.txt" (task: write the notes)',
    ]);
    expect(items.map((i) => i.text).join('\n')).not.toContain('other.txt');
  }, 90_000);
});

describe('what every request carries, and how an answer ended', () => {
  it('sends the configured temperature with every request, and says when the answer was cut at the output limit', async () => {
    const cut = { text: 'The answer begins and then', finish: 'length' as const };
    const server = await model([
      { tool_calls: [{ id: 'r1', name: 'read_file', arguments: { path: 'README.md' } }] },
      cut,
      cut,
      cut,
    ]);
    const repo = gitRepo();
    const home = keelHome('temperature = 0.3\nmax_output_tokens = 64\n');
    const json = await keel(['ask', '--json', ...modelFlags(server), 'explain the readme'], {
      cwd: repo,
      home,
    });
    const doc = JSON.parse(json.stdout) as Record<string, unknown>;
    const bodies = chatBodies(server) as Array<{ temperature?: number; max_tokens?: number }>;
    expect(bodies).toHaveLength(4);
    for (const body of bodies) {
      expect(body.temperature).toBe(0.3);
      expect(body.max_tokens).toBe(64);
    }
    expect(doc.code).toBe('COMPLETED');
    expect(doc.finish).toBe('length');
    // on a terminal's stderr, the cut is said in words, not a silent COMPLETED
    const server2 = await model([cut, cut, cut]);
    const plain = await keel(['ask', ...modelFlags(server2), 'explain the readme'], { cwd: repo, home });
    expect(plain.code).toBe(0);
    expect(plain.stderr).toMatch(/the answer was cut at the output limit \(max_output_tokens = 64\)/);
    // and a piped chat (the plain face) says it in its transcript
    const server3 = await model([cut, cut, cut]);
    const chat = await keel(['chat', ...modelFlags(server3)], { cwd: repo, home, input: 'explain it\n' });
    expect(chat.stdout).toMatch(/the answer was cut at the output limit \(max_output_tokens = 64\)/);
  });

  it('keel serve says so too: the end event and the stored session_end carry finish "length"', async () => {
    const cut = { text: 'The answer begins and then', finish: 'length' as const };
    const server = await model([cut, cut, cut]);
    const repo = gitRepo();
    const s = await startServe({ cwd: repo, home: keelHome(), args: modelFlags(server) });
    const created = await s.api('POST', '/v1/sessions', { prompt: 'explain the readme' });
    const id = created.body.session_id as string;
    const all = await readStream(`${s.url}v1/sessions/${id}/events`, (f) => f.event === 'end', {
      token: s.token,
    });
    expect(all.find((f) => f.event === 'session_end')?.data).toMatchObject({ data: { finish: 'length' } });
    expect(all.at(-1)?.data).toEqual({ code: 'COMPLETED', state: 'completed', finish: 'length' });
    // a client that connects after the run ended is told the same
    const late = await readStream(`${s.url}v1/sessions/${id}/events`, (f) => f.event === 'end', {
      token: s.token,
    });
    expect(late.at(-1)?.data).toEqual({ code: 'COMPLETED', state: 'completed', finish: 'length' });
  });
});
