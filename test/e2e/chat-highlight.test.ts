/**
 * Code blocks in the full-screen chat are coloured by their language (issue 29): the real binary in a
 * tmux pane, a scripted answer with fences, the screen read back with its escape codes. The piped (plain)
 * chat gets no colour at all.
 */
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { keel, keelHome, model, modelFlags } from './harness.js';
import { Pane } from './pane.js';

const ANSWER = [
  'A TypeScript fence:',
  '',
  '```ts',
  'export function total(xs: number[]): number {',
  '  return xs.length; // how many',
  '}',
  '```',
  '',
  'A Python one:',
  '',
  '```python',
  'def twice(x):',
  '    return "x" * 2',
  '```',
  '',
  'And no language:',
  '',
  '```',
  'const plain = 1;',
  '```',
  '',
  'The end.',
].join('\n');

describe('keel chat colours code blocks', () => {
  it('a ts fence shows its keywords, strings and comments coloured; a fence without a language stays plain', async () => {
    const server = await model([{ text: ANSWER }]);
    const repo = gitRepo();
    const home = keelHome();
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(/ctx \d/);
    pane.type('show me code', 'Enter');
    await pane.waitFor('The end.');
    // the first fence is drawn plain until highlight.js has loaded, then redrawn coloured
    const end = Date.now() + 10_000;
    let raw = pane.screen(true);
    while (!raw.includes('\x1b[35mexport') && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
      raw = pane.screen(true);
    }
    // keywords magenta, the function's name blue, types cyan, a comment grey, a string green
    expect(raw).toContain('\x1b[35mexport');
    expect(raw).toContain('\x1b[35mfunction');
    expect(raw).toContain('\x1b[34mtotal');
    expect(raw).toContain('\x1b[36mnumber');
    expect(raw).toContain('\x1b[90m// how many');
    expect(raw).toContain('\x1b[35mdef');
    expect(raw).toContain('\x1b[32m"x"');
    // the fence with no language: its `const` is not coloured
    const plainLine = raw.split('\n').find((l) => l.includes('plain = 1'));
    expect(plainLine).toBeDefined();
    expect(plainLine).not.toContain('\x1b[35mconst');
    // the text on screen is the code as written
    const text = pane.screen();
    expect(text).toContain('export function total(xs: number[]): number {');
    expect(text).toContain('return xs.length; // how many');
  });

  it('piped, the chat writes the code with no escape code', async () => {
    const server = await model([{ text: ANSWER }]);
    const repo = gitRepo();
    const home = keelHome();
    const run = await keel(['chat', ...modelFlags(server)], { cwd: repo, home, input: 'show me code\n' });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('export function total(xs: number[]): number {');
    expect(run.stdout).not.toContain('\x1b');
  });
});
