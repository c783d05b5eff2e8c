/**
 * A running shell command's output streams live in chat (its last lines, folded when it ends), and the
 * streamed bytes are inert: a title-setting OSC and a screen clear in the output show as visible text
 * and never act on the terminal. The model still gets the command's exact output.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatBodies, keelHome, model, modelFlags, requestMessages } from '../e2e/harness.js';
import { Pane, paneSocket } from '../e2e/pane.js';
import { gitRepo } from '../helpers/tmp.js';

const IDLE = /^(?![\s\S]*working · Ctrl\+C stops)/;
// the output lines are made by printf, so the command line (the tool's headline) holds none of them
const COMMAND =
  "printf 'live-%s\\n' one two; printf 'title \\033]2;%s\\007 cleared \\033[2J\\n' pwned; " +
  'while [ ! -f go ]; do sleep 0.1; done; echo live-three';

function paneTitle(pane: Pane): string {
  return execFileSync(
    'tmux',
    ['-L', paneSocket(), 'display-message', '-p', '-t', pane.name, '#{pane_title}'],
    {
      encoding: 'utf8',
    },
  ).trim();
}

describe('keel chat: live shell output', () => {
  it('shows the running command’s last lines inert, folds them when it ends, and sends the model the exact output', async () => {
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command: COMMAND } }] },
      { text: 'all done' },
    ]);
    const repo = gitRepo({ 'README.md': '# demo\n' });
    const home = keelHome();
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(/ctx \d/);
    const before = paneTitle(pane);
    pane.type('run it', 'Enter');
    // the command waits for the test's go: these lines can only be the live ones
    const live = await pane.waitFor('live-two');
    expect(live).toContain('live-one');
    expect(live).toContain('title \\x1b]2;pwned\\x07 cleared \\x1b[2J');
    expect(live).not.toMatch(/exit 0/);
    expect(paneTitle(pane)).toBe(before);
    expect(paneTitle(pane)).not.toContain('pwned');

    writeFileSync(join(repo, 'go'), '');
    const done = await pane.waitFor('all done');
    await pane.waitFor(IDLE);
    // folded: one summary line under the call, the streamed lines gone
    expect(done).toMatch(/● shell \$ printf[^\n]*\n\s*└ allowed · exit 0 · \d+ ms\n\s*all done/);
    expect(pane.screen()).not.toContain('live-one');
    expect(paneTitle(pane)).not.toContain('pwned');
    // the model's tool result is the command's exact output, escapes and all
    const result = requestMessages(chatBodies(server).at(-1)).find((m) => m.role === 'tool');
    expect(result?.content).toContain(
      'live-one\nlive-two\ntitle \x1b]2;pwned\x07 cleared \x1b[2J\nlive-three',
    );
  });
});
