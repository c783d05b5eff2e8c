/** `keel chat` as a person uses it: the real binary in a tmux pane, a scripted model, the log read back. */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tokens } from '../../src/chat/describe.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import {
  catalogueOf,
  chatBodies,
  ends,
  eventually,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  requestMessages,
} from './harness.js';
import { Pane, paneSocket, send } from './pane.js';

const READY = /ctx \d/;

describe('keel chat in a terminal', () => {
  it('streams an answer as markdown, and model escape sequences reach the screen only as visible text', async () => {
    const server = await model([
      {
        text: 'Here is **bold** \x1b]52;c;SGVsbG8=\x07 then \x1b[2J and the end.',
        reasoning: 'I should answer briefly.',
        chunk_size: 4,
        chunk_delay_ms: 5,
      },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', '--context-window', '32000', ...modelFlags(server)], {
      cwd: repo,
      home,
    });
    await pane.waitFor(READY);
    pane.type('say something', 'Enter');
    const screen = await pane.waitFor('the end.');
    // the raw sequences would have cleared the screen and set the clipboard; here they are text
    expect(screen).toContain('\\x1b]52;c;SGVsbG8=\\x07 then \\x1b[2J and the end.');
    expect(screen).toContain('› say something');
    expect(screen).toContain('Here is bold');
    expect(screen).toMatch(/thinking · 1 line/);
    // the status line: model, mode, the last request's size against the window, cost, sandbox
    await pane.waitFor(/test-model · ask · ctx [\d.]+k?\/32k \(\d+%\) · cost n\/a · read-only/);
    const raw = pane.screen(true);
    expect(raw).not.toContain('\x1b]52');
    expect(raw).not.toContain('\x1b[2J');
    const events = await eventually(() => {
      const all = lastSessionEvents(home);
      return ends(all).length ? all : undefined;
    });
    expect(events.find((e) => e.type === 'user_message')?.data.text).toBe('say something');
    expect(ends(events)).toEqual(['COMPLETED']);
  });

  it('bare keel at a terminal is keel chat', async () => {
    const server = await model([{ text: 'hello from bare keel' }]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(modelFlags(server), { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('hi', 'Enter');
    await pane.waitFor('hello from bare keel');
    const events = await eventually(() => {
      const all = lastSessionEvents(home);
      return ends(all).length ? all : undefined;
    });
    expect(events.find((e) => e.type === 'user_message')?.data.text).toBe('hi');
  });

  it("a model error is one line in the chat, with the server's words made inert, and the chat goes on", async () => {
    const server = await model([
      { error: { status: 400, body: 'bad request \x1b[2J\x1b]0;pwned\x07 here' } },
      { text: 'back again' },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('first', 'Enter');
    const screen = await pane.waitFor('MODEL_ERROR');
    expect(screen).toContain('\\x1b[2J');
    expect(pane.screen(true)).not.toContain('\x1b[2J');
    expect(pane.screen(true)).not.toContain('\x1b]0;');
    pane.type('again', 'Enter');
    await pane.waitFor('back again');
  });

  it('shows a tool call with its decision and outcome, and a coloured diff for a write', async () => {
    const server = await model([
      { tool_calls: [{ id: 'c1', name: 'read_file', arguments: { path: 'README.md' } }] },
      {
        tool_calls: [
          {
            id: 'c2',
            name: 'write_file',
            arguments: { path: 'notes.txt', content: 'first line\nsecond line\n' },
          },
        ],
      },
      { text: 'Wrote the notes.' },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('write notes', 'Enter');
    const screen = await pane.waitFor('Wrote the notes.');
    expect(screen).toMatch(/● read_file README\.md\s*\n\s*└ allowed · 1 line/);
    expect(screen).toMatch(/● write_file notes\.txt\s*\n\s*└ allowed · \+2 -0 in notes\.txt/);
    expect(screen).toContain('+first line');
    expect(screen).toContain('+second line');
    // green additions: the colour is keel's, around text already made inert
    expect(pane.screen(true)).toContain('\x1b[32m+first line');
    expect(readFileSync(join(repo, 'notes.txt'), 'utf8')).toBe('first line\nsecond line\n');
    expect(pane.screen()).toMatch(/edit · ctx/);
  });

  it('shows a command’s output while it runs, then its exit code', async () => {
    const server = await model([
      {
        tool_calls: [
          {
            id: 's1',
            name: 'shell',
            arguments: { command: 'echo tick-one; sleep 1.5; echo tick-two; exit 3' },
          },
        ],
      },
      { text: 'it failed with 3' },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('run it', 'Enter');
    const running = await pane.waitFor('tick-one');
    // still running: no outcome yet
    expect(running).not.toContain('· exit 3');
    const done = await pane.waitFor('it failed with 3');
    expect(done).toMatch(
      /● shell \$ echo tick-one; sleep 1\.5; echo tick-two; exit 3\s*\n\s*└ allowed · exit 3/,
    );
    const result = lastSessionEvents(home).find((e) => e.type === 'tool_result');
    expect(result?.data.outcome).toMatchObject({ exit_code: 3 });
  });

  it('asks before a write (approvals = "writes"): y and Enter lets it land, e sends the person\'s reason back to the model', async () => {
    const server = await model([
      {
        tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'yes.txt', content: 'allowed\n' } }],
      },
      {
        tool_calls: [{ id: 'w2', name: 'write_file', arguments: { path: 'no.txt', content: 'refused\n' } }],
        expect: { last_tool_result_contains: 'yes.txt' },
      },
      { text: 'understood', expect: { last_tool_result_contains: 'use the notes folder instead' } },
    ]);
    const repo = gitRepo();
    const home = keelHome('approvals = "writes"\n');
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('write two files', 'Enter');
    const screen = await pane.waitFor('keel asks: write_file wants to change yes.txt');
    expect(screen).toContain('+allowed');
    // every answer is typed and sent with Enter, once the prompt takes keys
    await pane.waitFor('y yes · n no · always for write_file · e no, and say why · then Enter');
    pane.type('y', 'Enter');
    await pane.waitFor(/write_file yes\.txt\s*\n\s*└ allowed · \+1 -0 in yes\.txt/);
    await pane.waitFor('keel asks: write_file wants to change no.txt');
    await pane.waitFor('then Enter');
    pane.type('e', 'Enter');
    await pane.waitFor('tell the model why not');
    pane.type('use the notes folder instead', 'Enter');
    await pane.waitFor('understood');
    expect(pane.screen()).toMatch(
      /✗ write_file no\.txt\s*\n\s*└ denied: the user declined: use the notes folder instead/,
    );
    expect(existsSync(join(repo, 'yes.txt'))).toBe(true);
    expect(existsSync(join(repo, 'no.txt'))).toBe(false);
    const gates = lastSessionEvents(home)
      .filter((e) => e.type === 'gate_decision')
      .map((e) => e.data.decision);
    expect(gates).toEqual(['ask', 'allow', 'ask', 'deny']);
  });

  it("asks when a hook asks; n is a plain no, and 'always' answers that tool for the rest of the chat", async () => {
    const server = await model([
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'one.txt', content: '1\n' } }] },
      { tool_calls: [{ id: 'w2', name: 'write_file', arguments: { path: 'two.txt', content: '2\n' } }] },
      { tool_calls: [{ id: 'w3', name: 'write_file', arguments: { path: 'three.txt', content: '3\n' } }] },
      { text: 'all asked' },
    ]);
    const repo = gitRepo();
    const hook = join(tempDir('keel-hook-'), 'ask.sh');
    writeFileSync(hook, '#!/bin/sh\necho \'{"decision": "ask", "reason": "may it write this file?"}\'\n', {
      mode: 0o755,
    });
    const home = keelHome(`[[hooks]]\nevent = "PreToolUse"\nmatcher = "write_file"\ncommand = ["${hook}"]\n`);
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('write three files', 'Enter');
    await pane.waitFor('may it write this file?');
    await pane.waitFor('then Enter');
    pane.type('n', 'Enter');
    await pane.waitFor(/✗ write_file one\.txt/);
    await pane.waitFor(/two\.txt/);
    await pane.waitFor('e no, and say why · then Enter');
    pane.type('always', 'Enter');
    await pane.waitFor('all asked');
    expect(existsSync(join(repo, 'one.txt'))).toBe(false);
    expect(existsSync(join(repo, 'two.txt'))).toBe(true);
    // the third call was answered by the remembered "always", with no prompt
    expect(existsSync(join(repo, 'three.txt'))).toBe(true);
    const gates = lastSessionEvents(home)
      .filter((e) => e.type === 'gate_decision')
      .map((e) => e.data.decision);
    expect(gates).toEqual(['ask', 'deny', 'ask', 'allow', 'ask', 'allow']);
  });

  it('/diff shows the change, /undo puts it back after a yes, /fork goes on in a branch, /agents and /memory answer', async () => {
    const server = await model([
      {
        tool_calls: [
          {
            id: 'e1',
            name: 'edit_file',
            arguments: { path: 'README.md', old_string: '# demo', new_string: '# changed' },
          },
        ],
      },
      { text: 'edited' },
      { text: 'in the fork', expect: { last_user_contains: 'after the fork' } },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('change the title', 'Enter');
    await pane.waitFor('edited');
    pane.type('/diff', 'Enter');
    await pane.waitFor('+# changed');
    pane.type('/agents', 'Enter');
    await pane.waitFor('no subagents in this session');
    // the first turn's end recorded what it changed; /memory lists it and a search finds it
    pane.type('/memory', 'Enter');
    await pane.waitFor(/newest memory items[\s\S]*Files changed: "README\.md"/);
    pane.type('/memory nothing-like-this-zzz', 'Enter');
    await pane.waitFor('nothing remembered matches');
    pane.type('/undo', 'Enter');
    await pane.waitFor('undo these changes? [y/N]');
    pane.type('y');
    await pane.waitFor('undone:');
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('# demo\n');
    // chat's /undo is recorded as keel undo's is: in the session's log and in the audit chain
    const undo = await eventually(() => lastSessionEvents(home).find((e) => e.type === 'undo'));
    expect(undo.data.applied).toBe(true);
    const audit = await keel(['audit', 'tail', '--json'], { cwd: repo, home });
    expect(audit.stdout).toContain('"undo"');
    const original = lastSessionEvents(home)[0]?.session_id;
    pane.type('/fork', 'Enter');
    await pane.waitFor(/forked \S+ at event \d+ into \S+; going on in the fork/);
    pane.type('after the fork', 'Enter');
    await pane.waitFor('in the fork');
    const events = lastSessionEvents(home);
    expect(events[0]?.session_id).not.toBe(original);
    expect(events.some((e) => e.type === 'session_fork' && e.data.from === original)).toBe(true);
  });

  it('/compact folds the older turns into a summary, recorded in the log', async () => {
    const big = (tag: string) =>
      Array.from({ length: 300 }, (_, i) => `${tag} line ${i}: ${'value '.repeat(8)}`).join('\n');
    const repo = gitRepo({ 'f1.txt': big('FIRST'), 'f2.txt': big('SECOND'), 'f3.txt': big('THIRD') });
    const home = keelHome();
    const usage = { usage: { prompt_tokens: 100, completion_tokens: 10 } };
    const read = (path: string) => ({ tool_calls: [{ name: 'read_file', arguments: { path } }], ...usage });
    const server = await model([
      read('f1.txt'),
      read('f2.txt'),
      read('f3.txt'),
      { text: 'They hold values.', ...usage },
      { text: 'SUMMARY: three files read', ...usage },
      { text: 'Still here.', ...usage },
    ]);
    const pane = Pane.start(['chat', '--context-window', '32000', ...modelFlags(server)], {
      cwd: repo,
      home,
    });
    await pane.waitFor(READY);
    pane.type('read the files', 'Enter');
    await pane.waitFor('They hold values.');
    const firstEnd = await eventually(() => lastSessionEvents(home).find((e) => e.type === 'session_end'));
    const firstTokens = firstEnd.data.tokens as { input: number; output: number };
    const firstTotal = firstTokens.input + firstTokens.output;
    // the footer is the turn's own: its rounds and its tokens
    await pane.waitFor(`this turn: 4 rounds · ${tokens(firstTotal)} tokens`);
    pane.type('/compact', 'Enter');
    await pane.waitFor(/compacted: \S+ -> \S+ tokens \(events from \d+ kept verbatim\)/);
    const compaction = lastSessionEvents(home).find((e) => e.type === 'compaction');
    expect(compaction?.data).toMatchObject({ trigger: 'manual', summary: 'SUMMARY: three files read' });
    // the status line shows the compacted history against the window, not the last request's size
    const after = compaction?.data.tokens_after as number;
    await pane.waitFor(`ctx ${tokens(after)}/32k (${Math.round((100 * after) / 32000)}%)`);
    pane.type('and now?', 'Enter');
    await pane.waitFor('Still here.');
    const ends = await eventually(() => {
      const found = lastSessionEvents(home).filter((e) => e.type === 'session_end');
      return found.length === 2 ? found : undefined;
    });
    const second = ends[1]?.data.tokens as { input: number; output: number };
    await pane.waitFor(`this turn: 1 round · ${tokens(second.input + second.output - firstTotal)} tokens`);
    expect(pane.screen()).not.toContain(`${tokens(second.input + second.output)} tokens`);
  });

  it('answers slash commands, refuses unknown ones with a suggestion, and sends path-like and spaced slash text', async () => {
    const server = await model([{ text: 'about the file' }, { text: 'about the literal' }]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('/help', 'Enter');
    await pane.waitFor('/compact');
    pane.type('/mdoe', 'Enter');
    await pane.waitFor('unknown command /mdoe; did you mean /mode?');
    pane.type('/mode plan', 'Enter');
    await pane.waitFor(/plan · ctx/);
    pane.type('/src/app.ts is it there?', 'Enter');
    await pane.waitFor('about the file');
    pane.type(' /mdoe literally', 'Enter');
    await pane.waitFor('about the literal');
    const users = lastSessionEvents(home)
      .filter((e) => e.type === 'user_message')
      .map((e) => e.data.text);
    expect(users).toEqual(['/src/app.ts is it there?', '/mdoe literally']);
    // nothing but those two went to the model
    expect(chatBodies(server)).toHaveLength(2);
    const modes = lastSessionEvents(home).filter(
      (e) => e.type === 'session_start' || e.type === 'session_resume',
    );
    expect(modes.map((e) => e.data.mode)).toEqual(['plan', 'plan']);
  });

  it('/model switches the model for the next turn, /resume lists sessions and reopens one with its transcript', async () => {
    const server = await model(
      [{ text: 'old session answer' }, { text: 'from the other model', expect: { model: 'other-model' } }],
      { models: ['test-model', 'other-model'] },
    );
    const repo = gitRepo();
    const home = keelHome();
    const earlier = await keel(['ask', ...modelFlags(server), 'an earlier question'], { cwd: repo, home });
    expect(earlier.code).toBe(0);
    const oldId = lastSessionEvents(home)[0]?.session_id as string;
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('/resume', 'Enter');
    await pane.waitFor(`${oldId}  ask`);
    pane.type(`/resume ${oldId.slice(0, 17)}`, 'Enter');
    await pane.waitFor('old session answer');
    expect(pane.screen()).toContain('› an earlier question');
    pane.type('/model other-model', 'Enter');
    await pane.waitFor(/other-model · ask/);
    pane.type('go on', 'Enter');
    await pane.waitFor('from the other model');
    const events = lastSessionEvents(home);
    expect(events[0]?.session_id).toBe(oldId);
    expect(events.filter((e) => e.type === 'user_message').map((e) => e.data.text)).toEqual([
      'an earlier question',
      'go on',
    ]);
  });

  it('attaches an @file from the workspace and refuses a link that leads out of it', async () => {
    const server = await model([{ text: 'read it', expect: { last_user_contains: 'TOP SECRET PLAN' } }]);
    const outside = tempDir('keel-outside-');
    writeFileSync(join(outside, 'secret.txt'), 'outside secret\n');
    const repo = gitRepo({ 'plan.md': 'TOP SECRET PLAN\n' });
    const { symlinkSync } = await import('node:fs');
    symlinkSync(join(outside, 'secret.txt'), join(repo, 'leak.txt'));
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('look at @leak.txt now', 'Enter');
    await pane.waitFor('@leak.txt is a link that leads outside the workspace');
    pane.type(`and @${join(outside, 'secret.txt')} now`, 'Enter');
    await pane.waitFor(`@${join(outside, 'secret.txt')} is outside the workspace`);
    pane.type('or @../../etc/passwd now', 'Enter');
    await pane.waitFor('@../../etc/passwd is outside the workspace');
    pane.type('look at @plan.md please', 'Enter');
    await pane.waitFor('read it');
    expect(chatBodies(server)).toHaveLength(1);
    // a chat turn has the same tools as a one-shot session: memory and the code graph too
    expect(catalogueOf(chatBodies(server)[0])).toEqual(expect.arrayContaining(['memory', 'code_graph']));
    const sent = JSON.stringify(chatBodies(server));
    expect(sent).not.toContain('outside secret');
  });

  it('delivers a message typed during a turn at the next step', async () => {
    const server = await model([
      { tool_calls: [{ id: 'c1', name: 'read_file', arguments: { path: 'README.md' } }], delay_ms: 1500 },
      { text: 'steered fine', expect: { last_user_contains: 'also look at the tests' } },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('look around', 'Enter');
    await pane.waitFor('working');
    // typed while the model is answering (a message typed before the first request goes with it)
    await eventually(() => lastSessionEvents(home).some((e) => e.type === 'model_request'));
    pane.type('also look at the tests', 'Enter');
    await pane.waitFor('queued for the next step');
    await pane.waitFor('steered fine');
    expect(pane.screen()).toContain('steering delivered: also look at the tests');
    const events = lastSessionEvents(home);
    const types = events.map((e) => (e.type === 'user_message' ? `user:${e.data.text}` : e.type));
    const steer = types.indexOf('user:also look at the tests');
    expect(steer).toBeGreaterThan(types.indexOf('tool_result'));
    expect(types.lastIndexOf('model_request')).toBeGreaterThan(steer);
    expect(ends(events)).toEqual(['COMPLETED']);
  }, 90_000);

  it('Ctrl+C stops the turn (its run ends CANCELLED) and a second Ctrl+C leaves', async () => {
    const server = await model([{ hang: true }]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    await send(pane, 'take forever');
    await eventually(() => lastSessionEvents(home).some((e) => e.type === 'model_request'));
    pane.keys('C-c');
    await pane.waitFor(/CANCELLED/);
    expect(ends(lastSessionEvents(home))).toEqual(['CANCELLED']);
    // still in the chat: the prompt takes input
    expect(pane.screen()).not.toContain('[keel exited');
    pane.keys('C-c');
    await pane.waitFor('[keel exited 0]');
  }, 90_000);

  it('Ctrl+C at an approval prompt is a no, and the turn still ends CANCELLED', async () => {
    const server = await model([
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'never.txt', content: 'x\n' } }] },
    ]);
    const repo = gitRepo();
    const home = keelHome('approvals = "writes"\n');
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('write it', 'Enter');
    await pane.waitFor('keel asks: write_file wants to change never.txt');
    pane.keys('C-c');
    await pane.waitFor(/CANCELLED/);
    expect(existsSync(join(repo, 'never.txt'))).toBe(false);
    expect(ends(lastSessionEvents(home))).toEqual(['CANCELLED']);
    expect(pane.screen()).not.toContain('[keel exited');
  });

  it('Ctrl+C twice during a turn leaves at once, with the log complete', async () => {
    const server = await model([{ hang: true }]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    await send(pane, 'take forever');
    await eventually(() => lastSessionEvents(home).some((e) => e.type === 'model_request'));
    pane.keys('C-c', 'C-c');
    await pane.waitFor('[keel exited 0]');
    expect(ends(lastSessionEvents(home))).toEqual(['CANCELLED']);
  }, 90_000);

  it('--continue reopens the newest session with its transcript, and the next turn goes on in it', async () => {
    const server = await model([
      { text: 'first answer' },
      { text: 'second answer', expect: { last_user_contains: 'and now' } },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const first = await keel(['ask', ...modelFlags(server), 'the first question'], { cwd: repo, home });
    expect(first.code).toBe(0);
    const pane = Pane.start(['chat', '--continue', ...modelFlags(server)], { cwd: repo, home });
    const screen = await pane.waitFor(READY);
    expect(screen).toContain('› the first question');
    expect(screen).toContain('first answer');
    pane.type('and now', 'Enter');
    await pane.waitFor('second answer');
    const events = await eventually(() => {
      const all = lastSessionEvents(home);
      return ends(all).length === 2 ? all : undefined;
    });
    expect(events.filter((e) => e.type === 'user_message').map((e) => e.data.text)).toEqual([
      'the first question',
      'and now',
    ]);
    expect(ends(events)).toEqual(['COMPLETED', 'COMPLETED']);
    // the messages sent on the second turn carry the first one's history
    const second = requestMessages(chatBodies(server)[1]);
    expect(second.some((m) => m.content === 'first answer')).toBe(true);
  });

  it('with NO_COLOR, the plain chat writes no escape code at all', async () => {
    const server = await model([{ text: 'plain \x1b[31mred\x1b[0m answer' }]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home, env: { NO_COLOR: '1' } });
    await pane.waitFor(/^>/m);
    pane.type('hi', 'Enter');
    await pane.waitFor('red');
    expect(pane.screen()).toContain('plain \\x1b[31mred\\x1b[0m answer');
    // tmux keeps the attributes of what was drawn: none were
    expect(pane.screen(true)).not.toContain('\x1b');
    expect(
      await eventually(() => ends(lastSessionEvents(home)).length && ends(lastSessionEvents(home))),
    ).toEqual(['COMPLETED']);
  });

  it('the plain chat asks on its own line, and a typed answer that is not y/n/a goes back to the model', async () => {
    const server = await model([
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'x.txt', content: 'x\n' } }] },
      { text: 'ok then', expect: { last_tool_result_contains: 'not that file' } },
    ]);
    const repo = gitRepo();
    const home = keelHome('approvals = "writes"\n');
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], {
      cwd: repo,
      home,
      env: { NO_COLOR: '1' },
    });
    await pane.waitFor(/^>/m);
    pane.type('write x', 'Enter');
    await pane.waitFor('keel asks: write_file wants to change x.txt  [y]es [n]o always, or type why not');
    expect(pane.screen()).toContain('+x');
    pane.type('not that file', 'Enter');
    await pane.waitFor('ok then');
    expect(pane.screen()).toContain('✗ write_file x.txt · denied: the user declined: not that file');
    expect(existsSync(join(repo, 'x.txt'))).toBe(false);
    expect(pane.screen(true)).not.toContain('\x1b');
  });

  it('with TERM=dumb, the chat is plain lines too', async () => {
    const server = await model([{ text: 'dumb but fine' }]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home, env: { TERM: 'dumb' } });
    await pane.waitFor(/^>/m);
    pane.type('hi', 'Enter');
    await pane.waitFor('dumb but fine');
    expect(pane.screen(true)).not.toContain('\x1b');
  });

  it('reads a piped stdin as turns in order, with tool lines and no escape codes', async () => {
    const server = await model([
      { tool_calls: [{ id: 'c1', name: 'read_file', arguments: { path: 'README.md' } }] },
      { text: 'one done' },
      { text: 'two done', expect: { last_user_contains: 'second' } },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const run = await keel(['chat', ...modelFlags(server)], {
      cwd: repo,
      home,
      env: { NO_COLOR: undefined, TERM: 'xterm-256color' },
      input: 'first\n/cost\nsecond\n',
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('● read_file README.md · allowed · 1 line');
    expect(run.stdout).toContain('one done');
    expect(run.stdout).toMatch(/tokens \d+/);
    expect(run.stdout).toContain('two done');
    expect(run.stdout + run.stderr).not.toContain('\x1b');
    const events = lastSessionEvents(home);
    expect(events.filter((e) => e.type === 'user_message').map((e) => e.data.text)).toEqual([
      'first',
      'second',
    ]);
    expect(ends(events)).toEqual(['COMPLETED', 'COMPLETED']);
  });

  it('takes multi-line input, collapses a large paste, completes with Tab, and Ctrl+O unfolds reasoning', async () => {
    const server = await model([
      { text: 'got two lines', reasoning: 'the hidden chain of thought' },
      { text: 'got the paste' },
    ]);
    const repo = gitRepo({ 'README.md': '# demo\n', 'notes-for-tab.md': 'n\n' });
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    // a trailing backslash goes on to a new line instead of sending
    pane.type('line one\\', 'Enter');
    pane.type('line two', 'Enter');
    await pane.waitFor('got two lines');
    expect(pane.screen()).not.toContain('the hidden chain of thought');
    pane.keys('C-o');
    await pane.waitFor('the hidden chain of thought');
    // Tab completes a command name (once the list is up: a Tab before it asks for the list again)
    pane.type('/hel');
    await pane.waitFor('the commands and keys');
    pane.keys('Tab');
    await pane.waitFor(/\/help\s*$/m);
    pane.keys('C-u');
    // a paste of many lines shows as a marker, and the whole text is sent
    const pasted = Array.from({ length: 30 }, (_, i) => `pasted line ${i}`).join('\n');
    execFileSync('tmux', ['-L', paneSocket(), 'set-buffer', '-b', 'big', pasted]);
    execFileSync('tmux', ['-L', paneSocket(), 'paste-buffer', '-p', '-b', 'big', '-t', pane.name]);
    await pane.waitFor(/\[paste #1 \+30 lines\]/);
    pane.keys('Enter');
    await pane.waitFor('got the paste');
    const users = lastSessionEvents(home)
      .filter((e) => e.type === 'user_message')
      .map((e) => e.data.text);
    expect(users).toEqual(['line one\nline two', pasted]);
  });

  it('refuses to start without a model, naming the config to write, and a piped chat exits as its last turn did', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const none = await keel(['chat'], { cwd: repo, home, input: 'hi\n' });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(
      `no model configured: run \`keel init\` to write ${join(home, 'config.toml')}`,
    );
    const server = await model([
      { tool_calls: [{ id: 'c1', name: 'read_file', arguments: { path: 'README.md' } }] },
    ]);
    const capped = await keel(['chat', '--max-rounds', '1', ...modelFlags(server)], {
      cwd: repo,
      home,
      input: 'look\n',
    });
    expect(capped.stdout).toContain('BUDGET_EXCEEDED');
    expect(capped.code).toBe(1);
  });

  it('keeps the prompt history per project across chats', async () => {
    const server = await model([{ text: 'noted' }]);
    const repo = gitRepo();
    const home = keelHome();
    const first = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await first.waitFor(READY);
    first.type('remember this prompt', 'Enter');
    await first.waitFor('noted');
    first.kill();
    const second = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await second.waitFor(READY);
    second.keys('Up');
    await second.waitFor(/│?\s*remember this prompt/);
    expect(existsSync(join(home, 'chat-history'))).toBe(true);
  });
});
