/**
 * Issue 25, item 13: a one-shot answer drawn as Markdown on a terminal is made inert before the
 * renderer sees it. An escape sequence in any Markdown construct (heading, emphasis, code span, code
 * block, link text and address, raw HTML) or spelled as an HTML entity reaches the terminal as visible
 * text: it never erases a line, sets the clipboard, or hides a link's address.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { keelHome, model, modelFlags } from '../e2e/harness.js';
import { Pane, paneSocket } from '../e2e/pane.js';
import { gitRepo } from '../helpers/tmp.js';

const ESC = '\x1b';
const OSC52 = `${ESC}]52;c;cHduZWQ=\x07`; // "pwned" into the clipboard
const ERASE = `${ESC}[2K\r`; // erase the line, back to column 0

const ATTACK = [
  `# Title ${ESC}[8mhidden`,
  '',
  `KEEP-1 **bold ${OSC52}** and \`span ${ERASE}\` done`,
  '',
  '```sh',
  `KEEP-2 ${ERASE}rm -rf ~`,
  '```',
  '',
  `[safe link](https://evil.example/${ESC}]8;;https://good.example${ESC}\\)`,
  '',
  `<b>KEEP-3 ${ESC}[2J</b> &#27;[2J &#x1b;]52;c;cHduZWQ=&#7;`,
].join('\n');

describe('Markdown on a terminal is inert', () => {
  it('escape sequences in every Markdown construct are shown, never acted on', async () => {
    execFileSync('tmux', ['-L', paneSocket(), 'start-server', ';', 'set', '-g', 'set-clipboard', 'on']);
    const server = await model([{ text: ATTACK, chunk_size: 4 }]);
    const pane = Pane.start(['edit', ...modelFlags(server), 'look'], {
      cwd: gitRepo({ 'README.md': '# demo\n' }),
      home: keelHome(),
    });
    const screen = await pane.waitFor('[keel exited 0]');
    // the answer went through the Markdown renderer (its marks are gone)...
    expect(screen).not.toContain('# Title');
    expect(screen).not.toContain('**bold');
    // ...and every escape is a visible one: nothing was erased, hidden or cleared
    expect(screen).toContain('Title \\x1b[8mhidden');
    expect(screen).toContain('KEEP-1 bold \\x1b]52;c;cHduZWQ=\\x07 and span \\x1b[2K\\r done');
    expect(screen).toContain('KEEP-2 \\x1b[2K\\rrm -rf ~');
    expect(screen).toContain('safe link (https://evil.example/\\x1b]8;;https://good.example\\x1b\\)');
    expect(screen).toContain('KEEP-3 \\x1b[2J');
    // an entity stays an entity: the renderer never decodes it into a control character
    expect(screen).toContain('&#27;[2J &#x1b;]52;c;cHduZWQ=&#7;');
    // the clipboard was never written
    const buffers = execFileSync('tmux', ['-L', paneSocket(), 'list-buffers'], { encoding: 'utf8' });
    expect(buffers).toBe('');
  });
});
