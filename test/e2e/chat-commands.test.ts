/**
 * Chat's session and model commands, its turn footers and its `@` file picker, through the real binary:
 * in a tmux pane where it is about the full-screen face, piped where it is about the plain one.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tokens } from '../../src/chat/describe.js';
import { gitRepo } from '../helpers/tmp.js';
import { chatBodies, keel, keelHome, lastSessionEvents, model, modelFlags } from './harness.js';
import { Pane } from './pane.js';

const READY = /ctx \d/;

describe('keel chat: sessions, models, footers, files', () => {
  it("/resume lists this project's sessions with subagents and forks under their parents (--all: every project); /model checks the name against the server's list", async () => {
    // the session in A starts a subagent: it is listed under its parent, as the fork is
    const server = await model(
      [
        {
          task: 'question in A',
          tool_calls: [{ name: 'spawn_agent', arguments: { task: 'CHILD look around', name: 'helper' } }],
        },
        { task: 'CHILD look around', text: 'child done' },
        { task: 'question in A', tool_calls: [{ name: 'wait_agent', arguments: { names: ['helper'] } }] },
        { task: 'question in A', text: 'answer in A' },
        { task: 'question in B', text: 'answer in B' },
      ],
      { models: ['test-model', 'other-model'] },
    );
    const home = keelHome();
    const repoA = gitRepo();
    const repoB = gitRepo();
    expect((await keel(['ask', ...modelFlags(server), 'question in A'], { cwd: repoA, home })).code).toBe(0);
    const parent = (
      JSON.parse((await keel(['sessions', 'list', '--json'], { cwd: repoA, home })).stdout) as {
        sessions: Array<{ session_id?: string; id?: string }>;
      }
    ).sessions.map((r) => r.session_id ?? r.id)[0] as string;
    const forked = await keel(['sessions', 'fork', parent, '--json'], { cwd: repoA, home });
    expect(forked.code).toBe(0);
    const fork = (JSON.parse(forked.stdout) as { session_id: string }).session_id;
    expect(fork).toMatch(/\S/);
    expect((await keel(['ask', ...modelFlags(server), 'question in B'], { cwd: repoB, home })).code).toBe(0);
    const other = lastSessionEvents(home)[0]?.session_id as string;

    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repoA, home });
    await pane.waitFor(READY);
    pane.type('/resume', 'Enter');
    // the subagent and the fork sit under their parent, indented; the other project's session is not listed
    const listed = await pane.waitFor(
      new RegExp(
        `${parent}[^\\n]*question in A\\n\\s+↳ \\S+\\s+ask[^\\n]*CHILD look around\\n\\s+↳ ${fork}\\s+fork`,
      ),
    );
    expect(listed).not.toContain(other);
    expect(listed).toContain('/resume --all');
    pane.type('/resume --all', 'Enter');
    await pane.waitFor(new RegExp(`${other}[^\\n]*question in B`));

    pane.type('/model', 'Enter');
    await pane.waitFor(/test-model \(current\)\n\s+other-model/);
    pane.type('/model nope-model', 'Enter');
    await pane.waitFor('unknown model "nope-model": the server at');
    expect(pane.screen()).toMatch(/test-model · ask · ctx/);
    pane.type('/model other-model', 'Enter');
    await pane.waitFor(/other-model · ask · ctx/);
  });

  it("/model lists and checks Ollama's models, says so when the server keeps no list, and the plain chat announces a compaction and labels each turn's own numbers", async () => {
    const server = await model([], { models: ['qwen3:8b', 'llama3.2:latest'] });
    const home = keelHome();
    const repo = gitRepo();
    const ollama = await keel(
      ['chat', '--provider', 'ollama', '--base-url', server.ollamaUrl, '--model', 'qwen3:8b'],
      { cwd: repo, home, input: '/model\n/model mistral\n/model llama3.2\n' },
    );
    expect(ollama.stdout).toMatch(/qwen3:8b \(current\)\n\s+llama3\.2:latest/);
    expect(ollama.stdout).toMatch(
      /unknown model "mistral": the server at \S+ has qwen3:8b, llama3\.2:latest/,
    );
    expect(ollama.stdout).toContain('model llama3.2 from the next turn');

    // an OpenAI-compatible server without GET /models: the name is taken, and the chat says it was not checked
    const unlisted = await keel(
      ['chat', '--provider', 'openai', '--base-url', server.url.replace(/\/v1$/, '/nolist'), '--model', 'm1'],
      { cwd: repo, home, input: '/model\n/model any-name\n' },
    );
    expect(unlisted.stdout).toMatch(/model m1 \(provider openai\); the server at \S+ has no list of models/);
    expect(unlisted.stdout).toContain('model any-name from the next turn (not checked: the server at');

    // a threshold compaction during a piped turn is said in a line; each footer is that turn's own
    const big = (mark: string) =>
      Array.from({ length: 110 }, (_, i) => `${mark} line ${i}: value ${(i * 7919) % 10007}\n`).join('');
    const work = gitRepo({ 'f1.txt': big('FIRST'), 'f2.txt': big('SECOND'), 'f3.txt': big('THIRD') });
    const usage = { usage: { prompt_tokens: 100, completion_tokens: 10 } };
    const read = (path: string) => ({ tool_calls: [{ name: 'read_file', arguments: { path } }], ...usage });
    const compacting = await model([
      read('f1.txt'),
      read('f2.txt'),
      read('f3.txt'),
      { text: 'SUMMARY: three files', ...usage },
      { text: 'They hold values.', ...usage },
      { text: 'second answer', ...usage },
    ]);
    const run = await keel(['chat', ...modelFlags(compacting), '--context-window', '8000'], {
      cwd: work,
      home,
      input: 'read the three files\nand now?\n',
    });
    expect(run.code).toBe(0);
    const events = lastSessionEvents(home);
    const compaction = events.find((e) => e.type === 'compaction')?.data as
      | { tokens_before: number; tokens_after: number }
      | undefined;
    expect(compaction).toBeDefined();
    expect(run.stdout).toContain(
      `compacted the history: ${tokens(compaction?.tokens_before ?? 0)} -> ${tokens(compaction?.tokens_after ?? 0)} tokens`,
    );
    const totals = events
      .filter((e) => e.type === 'session_end')
      .map((e) => {
        const t = e.data.tokens as { input: number; output: number };
        return t.input + t.output;
      });
    expect(totals).toHaveLength(2);
    const [first = 0, second = 0] = totals;
    expect(run.stdout).toContain(`(this turn: 4 rounds · ${tokens(first)} tokens)`);
    expect(run.stdout).toContain(`(this turn: 1 round · ${tokens(second - first)} tokens)`);
    expect(run.stdout).not.toContain(`${tokens(second)} tokens`);
    // the answer is printed once
    expect(run.stdout.split('They hold values.')).toHaveLength(2);
  });

  it('@ opens a fuzzy picker of the workspace files (not the ignored ones), Enter inserts the path and Tab completes it', async () => {
    const server = await model([
      { text: 'got the widget', expect: { last_user_contains: 'WIDGET SOURCE' } },
      { text: 'got the guide', expect: { last_user_contains: 'GUIDE TEXT' } },
    ]);
    const repo = gitRepo({
      'src/alpha-widget.ts': 'WIDGET SOURCE\n',
      'docs/guide.md': 'GUIDE TEXT\n',
      '.gitignore': 'build/\n',
    });
    mkdirSync(join(repo, 'build'));
    writeFileSync(join(repo, 'build', 'alpha-widget-out.js'), 'ignored\n');
    // an untracked file is offered too: it is the person's work
    writeFileSync(join(repo, 'notes-widget.md'), 'notes\n');
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('look at @alwid');
    const picker = await pane.waitFor('src/alpha-widget.ts');
    expect(picker).not.toContain('alpha-widget-out.js');
    // the best match is selected: Enter puts its path in the message
    pane.keys('Enter');
    await pane.waitFor(/look at @src\/alpha-widget\.ts\s/);
    pane.keys('Enter');
    await pane.waitFor('got the widget');
    // the message shows as typed, not again as steering with the file's text
    expect(pane.screen()).not.toContain('steering delivered');
    // typing narrows the list (hostile names: test/security/chat-file-names.test.ts)
    pane.type('@widget');
    const narrowed = await pane.waitFor('notes-widget.md');
    expect(narrowed).not.toContain('guide.md');
    pane.keys('C-u');
    await pane.waitFor(/^(?![\s\S]*notes-widget\.md)/);
    // Tab completes a path after @
    pane.type('and @docs/gu');
    pane.keys('Tab');
    await pane.waitFor(/and @docs\/guide\.md\s/);
    pane.keys('Enter');
    await pane.waitFor('got the guide');
    expect(chatBodies(server)).toHaveLength(2);
  });
});
