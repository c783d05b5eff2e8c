/**
 * Chat's /status, /rewind and /clear through the real binary in a tmux pane: one chat that edits a file
 * over three turns, looks at its own state, goes back a turn (files and conversation), then starts over.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { gitRepo } from '../helpers/tmp.js';
import { chatBodies, keelHome, model, modelFlags, requestMessages } from './harness.js';
import { Pane } from './pane.js';

const READY = /ctx \d/;
// the turn has ended when its spinner is gone (its footer shows a moment before)
const IDLE = /^(?![\s\S]*working · Ctrl\+C stops)/;
const write = (content: string) => ({
  tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content } }],
});

function sessions(home: string) {
  const db = openDb(join(home, 'keel.db'));
  try {
    const log = new EventLog(db);
    return log.listSessions(20).map((row) => ({ row, events: log.events(row.id) }));
  } finally {
    db.close();
  }
}

describe('keel chat: /status, /rewind, /clear, /export, /init', () => {
  it('/status names the settings and spend, /rewind 2 puts the file and the conversation back to turn 2 after asking, /clear starts a new session with the same settings, /export writes the transcript, /init drafts AGENTS.md through an approval; the status line shows the last answer’s ttft and tok/s as logged', async () => {
    const server = await model([
      write('v1\n'),
      { text: 'wrote one' },
      write('v2\n'),
      { text: 'wrote two' },
      write('v3\n'),
      // a slow first token and a slow stream: the status line's ttft and tok/s are this answer's
      {
        text: 'wrote three',
        delay_ms: 300,
        chunk_delay_ms: 100,
        usage: { prompt_tokens: 900, completion_tokens: 42 },
      },
      { text: 'after the rewind' },
      { text: 'a clean slate' },
      // /init: a write beside AGENTS.md is outside that turn's scope; AGENTS.md itself is asked first
      { tool_calls: [{ name: 'write_file', arguments: { path: 'other.txt', content: 'no\n' } }] },
      {
        tool_calls: [
          { name: 'write_file', arguments: { path: 'AGENTS.md', content: '# Agents\n\nrun npm test\n' } },
        ],
      },
      { text: 'drafted AGENTS.md' },
      { tool_calls: [{ name: 'write_file', arguments: { path: 'later.txt', content: 'yes\n' } }] },
      { text: 'wrote later' },
    ]);
    const repo = gitRepo({ 'a.txt': 'v0\n' });
    const home = keelHome();
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(READY);
    pane.type('first change', 'Enter');
    await pane.waitFor('wrote one');
    pane.type('second change', 'Enter');
    await pane.waitFor('wrote two');
    pane.type('third change', 'Enter');
    const three = await pane.waitFor(/wrote three\n\s*this turn:/);
    await pane.waitFor(IDLE);
    // the turns are numbered on screen as /rewind counts them
    expect(three).toMatch(/1 › first change[\s\S]*2 › second change[\s\S]*3 › third change/);
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('v3\n');
    const [first] = sessions(home);
    const old = first?.row.id as string;
    // the status line's ttft and tok/s are the last answer's, as its assistant_message logged them
    const last = first?.events.findLast((e) => e.type === 'assistant_message')?.data as {
      usage: { output: number };
      timing: { first_token_ms: number; total_ms: number };
    };
    expect(last.usage.output).toBe(42);
    expect(last.timing.first_token_ms).toBeGreaterThanOrEqual(300);
    const perSecond = Math.round((1000 * 42) / (last.timing.total_ms - last.timing.first_token_ms));
    expect(pane.screen()).toContain(
      `ttft ${(last.timing.first_token_ms / 1000).toFixed(1)} s · ${perSecond} tok/s`,
    );

    pane.type('/status', 'Enter');
    const status = await pane.waitFor(/session\s+\S+\n/);
    expect(status).toMatch(/model\s+test-model/);
    expect(status).toContain(`openai at ${server.url}`);
    expect(status).toMatch(/mode\s+edit/);
    expect(status).toMatch(/scope\s+\./);
    expect(status).toMatch(/sandbox\s+bwrap \(\S*bwrap\)/);
    expect(status).toMatch(/context\s+[\d.]+k?\/unknown/);
    expect(status).toMatch(/spend\s+[\d.]+k? tokens · cost unknown/);
    expect(status).toContain(`session   ${old}`);

    pane.type('/rewind 2', 'Enter');
    await pane.waitFor('rewind to the start of turn 2: second change');
    await pane.waitFor('put these files back and rewind to turn 2?');
    expect(pane.screen()).toMatch(/files put back:\n\s+\S.*a\.txt/);
    pane.type('y');
    const rewound = await pane.waitFor(/rewound \S+ to the start of turn 2: going on in \S+/);
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('v1\n');
    // the screen is the fork's: turn 1 only
    expect(rewound).toContain('1 › first change');
    expect(rewound).not.toContain('second change');
    const fork = /going on in ([\w-]+)/.exec(rewound)?.[1] as string;
    const rewind = sessions(home)
      .find((s) => s.row.id === old)
      ?.events.find((e) => e.type === 'rewind');
    expect(rewind?.data).toMatchObject({ turn: 2, fork, applied: true });
    // the next turn goes on from turn 1: the model sees the first message and not the later ones
    pane.type('and now', 'Enter');
    await pane.waitFor(/after the rewind\n\s*this turn:/);
    await pane.waitFor(IDLE);
    expect(pane.screen()).toContain('2 › and now');
    const afterRewind = requestMessages(chatBodies(server).at(-1)).map((m) => m.content ?? '');
    expect(afterRewind.join('\n')).toContain('first change');
    expect(afterRewind.join('\n')).not.toContain('second change');

    pane.type('/clear', 'Enter');
    const cleared = await pane.waitFor(`the last one goes on with /resume ${fork}`);
    expect(cleared).not.toContain('first change');
    expect(cleared).toMatch(/test-model · edit · ctx 0/);
    pane.type('fresh start', 'Enter');
    await pane.waitFor('a clean slate');
    await pane.waitFor(IDLE);
    const fresh = requestMessages(chatBodies(server).at(-1)).map((m) => m.content ?? '');
    expect(fresh.join('\n')).toContain('fresh start');
    expect(fresh.join('\n')).not.toContain('first change');
    const all = sessions(home);
    const newest = all[0];
    expect(newest?.row.id).not.toBe(fork);
    expect(newest?.row.mode).toBe('edit');
    expect(newest?.row.model).toBe('test-model');
    // the session before /clear is still there to go on with
    pane.type(`/resume ${fork}`, 'Enter');
    await pane.waitFor('2 › and now');

    // /export writes the session's transcript beside the work and says where
    pane.type('/export', 'Enter');
    const file = join(repo, `keel-session-${fork}.md`);
    await pane.waitFor(`exported the session to ${file}`);
    const md = readFileSync(file, 'utf8');
    expect(md).toMatch(
      /## Turn 1\n\n> first change\n[\s\S]*\*\*write_file\*\*[^\n]*— allow, ok\n\n```diff\n[\s\S]*-v0\n\+v1\n[\s\S]*wrote one[\s\S]*## Turn 2\n\n> and now\n\nafter the rewind/,
    );
    pane.type('/export pdf', 'Enter');
    await pane.waitFor('/export takes md or html, got "pdf"');

    // /init: a model turn with keel's own task that may write AGENTS.md only, after asking
    pane.type('/init', 'Enter');
    await pane.waitFor('keel asks: write_file wants to change AGENTS.md');
    expect(pane.screen()).toMatch(/3 › \/init: draft AGENTS\.md/);
    // the answer line shows once the question takes keys
    await pane.waitFor('then Enter');
    pane.type('y', 'Enter');
    await pane.waitFor('drafted AGENTS.md');
    await pane.waitFor(IDLE);
    expect(readFileSync(join(repo, 'AGENTS.md'), 'utf8')).toBe('# Agents\n\nrun npm test\n');
    expect(existsSync(join(repo, 'other.txt'))).toBe(false);
    const task = requestMessages(chatBodies(server).at(-3)).findLast((m) => m.role === 'user');
    expect(task?.content).toContain('Draft AGENTS.md for this repository');
    // the next turn has the chat's own scope again, and writes without asking in edit mode
    pane.type('one more', 'Enter');
    await pane.waitFor('wrote later');
    expect(readFileSync(join(repo, 'later.txt'), 'utf8')).toBe('yes\n');
  });
});
