/** A subagent at work in `keel chat`: its calls and counts show while its parent waits, then one line with its outcome. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { keel, keelHome, model, modelFlags } from './harness.js';
import { Pane } from './pane.js';

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
// a command that runs until the test lets it go (a file in the workspace), so the screen is read while it runs
const gated = (flag: string) => `while [ ! -f ${flag} ]; do sleep 0.05; done; echo ${flag} seen`;

describe('keel chat: subagents', () => {
  it("shows a working subagent's current call and its counts while the parent waits, folded to one line when it ends", async () => {
    const server = await model([
      { task: 'PARENT', tool_calls: [call('spawn_agent', { task: 'CHILD: look twice', name: 'scout' })] },
      { task: 'PARENT', tool_calls: [call('wait_agent', { names: ['scout'] })] },
      { task: 'CHILD', tool_calls: [call('shell', { command: gated('go1') })] },
      { task: 'CHILD', tool_calls: [call('shell', { command: gated('go2') })] },
      // the child's words are the model's: an escape sequence in them reaches the screen only as text
      { task: 'CHILD', text: 'Scouted: both flags seen. \x1b]52;c;SGVsbG8=\x07' },
      { task: 'PARENT', text: 'The scout is back.', expect: { last_tool_result_contains: 'Scouted' } },
    ]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', '--mode', 'auto', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(/ctx \d/);
    pane.type('PARENT: send a scout', 'Enter');

    // the child's first call, live, while the parent's wait runs
    let screen = await pane.waitFor(/agent scout working · 1 round · 1 tool call/);
    expect(screen).toMatch(/└ ● shell \$ while \[ ! -f go1 \]/);
    expect(screen).toContain('wait_agent');
    expect(screen).not.toContain('The scout is back.');

    // its second call replaces the first; the counts move on
    writeFileSync(join(repo, 'go1'), '');
    screen = await pane.waitFor(/agent scout working · 2 rounds · 2 tool calls/);
    expect(screen).toMatch(/└ ● shell \$ while \[ ! -f go2 \]/);
    expect(screen).not.toContain('go1 ]');

    // it ends: one line with its outcome, and the parent answers
    writeFileSync(join(repo, 'go2'), '');
    screen = await pane.waitFor('The scout is back.');
    expect(screen).toContain(
      '◆ agent scout COMPLETED · 3 rounds · 2 tool calls · Scouted: both flags seen. \\x1b]52;c;SGVsbG8=\\x07',
    );
    expect(screen).not.toMatch(/agent scout working/);
    expect(screen).not.toMatch(/└ ● shell \$ while/);
  });

  it("the plain face (piped) prints each of a subagent's calls as it ends, then its one line", async () => {
    const server = await model([
      { task: 'PARENT', tool_calls: [call('spawn_agent', { task: 'CHILD: echo twice', name: 'scout' })] },
      { task: 'PARENT', tool_calls: [call('wait_agent', { names: ['scout'] })] },
      { task: 'CHILD', tool_calls: [call('shell', { command: 'echo one' })] },
      { task: 'CHILD', tool_calls: [call('shell', { command: 'echo two' })] },
      { task: 'CHILD', text: 'Echoed twice.' },
      { task: 'PARENT', text: 'The scout is back.' },
    ]);
    const run = await keel(['chat', '--mode', 'auto', ...modelFlags(server)], {
      cwd: gitRepo(),
      home: keelHome(),
      input: 'PARENT: send a scout\n',
    });
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.split('\n').map((l) => l.trim());
    const at = (text: string) => lines.findIndex((l) => l.startsWith(text));
    const one = at('agent scout › ● shell $ echo one · exit 0');
    const two = at('agent scout › ● shell $ echo two · exit 0');
    const end = at('◆ agent scout COMPLETED · 3 rounds · 2 tool calls · Echoed twice.');
    const answer = at('The scout is back.');
    expect(
      [one, two, end, answer].every((i) => i >= 0),
      run.stdout,
    ).toBe(true);
    expect(one < two && two < end && end < answer, run.stdout).toBe(true);
  });
});
