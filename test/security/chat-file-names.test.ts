/**
 * A repository's file names are the repository author's words: in the full-screen `keel chat`, the `@`
 * picker and Tab's path completion list them, and a name holding escape sequences (`evil\x1b[2J...`)
 * written as it is cleared the screen (or worse: OSC 52 sets the clipboard). Such a name is left out of
 * every list, so it is neither drawn nor inserted into the message.
 */
import { describe, expect, it } from 'vitest';
import { keelHome, model, modelFlags } from '../e2e/harness.js';
import { Pane } from '../e2e/pane.js';
import { gitRepo } from '../helpers/tmp.js';

describe('full-screen chat: file names from the repository are never drawn raw', () => {
  it('the @ picker and Tab completion leave out a name with escape sequences', async () => {
    const server = await model([]);
    const repo = gitRepo({
      'evil\x1b[2J\x1b]52;c;cHduZWQ=\x07widget.txt': 'x\n',
      'good-widget.md': 'g\n',
      'evidence.md': 'e\n',
    });
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home: keelHome() });
    await pane.waitFor(/ctx \d/);
    // the header line stays: a raw 2J would have wiped it
    pane.type('@widget');
    const listed = await pane.waitFor('good-widget.md');
    expect(listed).toContain('keel chat ·');
    expect(listed).not.toContain('evil');
    pane.keys('C-u');
    await pane.waitFor(/^(?![\s\S]*good-widget\.md)/);
    // Tab after a plain path: the only other match completes at once, the hostile one is not offered
    pane.type('./evi');
    pane.keys('Tab');
    const completed = await pane.waitFor(/\.\/evidence\.md/);
    expect(completed).toContain('keel chat ·');
    expect(pane.screen(true)).not.toContain('\x1b]52');
  });
});
