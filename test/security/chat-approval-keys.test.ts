/**
 * Keys typed for a message must not answer an approval in the full-screen `keel chat`. The question
 * appears while the person is typing a sentence with an `a` in it: before, the prompt took the
 * keyboard mid-word and that `a` granted "always". Now the editor keeps the keyboard while it holds
 * unsent text, the prompt drops keys for a moment after it takes the keyboard, every answer needs
 * Enter, and "always" is the whole word: `a` then Enter is no answer at all.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keelHome, lastSessionEvents, model, modelFlags } from '../e2e/harness.js';
import { Pane } from '../e2e/pane.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

describe('full-screen chat: an approval is answered only on purpose', () => {
  it('a sentence typed as the prompt appears grants nothing; a then Enter is no answer; always then Enter is', async () => {
    const server = await model([
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'granted.txt', content: 'x\n' } }] },
      { text: 'wrote it' },
    ]);
    const repo = gitRepo();
    // the question comes (a hook asks) only once the test says so: while the person is mid-sentence
    const dir = tempDir('keel-keys-');
    const go = join(dir, 'go');
    const hook = join(dir, 'ask.sh');
    writeFileSync(
      hook,
      `#!/bin/sh\nwhile [ ! -e '${go}' ]; do sleep 0.05; done\necho '{"decision": "ask", "reason": "may it write granted.txt?"}'\n`,
      { mode: 0o755 },
    );
    const home = keelHome(`[[hooks]]\nevent = "PreToolUse"\nmatcher = "write_file"\ncommand = ["${hook}"]\n`);
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(/ctx \d/);
    pane.type('write it', 'Enter');
    await pane.waitFor('› write it');
    pane.type('please ');
    await pane.waitFor(/^please\s*$/m);
    writeFileSync(go, '');
    await pane.waitFor('may it write granted.txt?');
    // the rest of the sentence, with its `a`, typed after the question appeared
    pane.type('make a test');
    // it is still the person's message, in the editor, and nothing was granted
    await pane.waitFor('please make a test');
    await pane.waitFor('your message is not sent');
    expect(existsSync(join(repo, 'granted.txt'))).toBe(false);
    // sending the message hands the keyboard to the question
    pane.keys('Enter');
    await pane.waitFor('then Enter');
    // a single key and Enter is not "always" (nor any answer)
    pane.type('a', 'Enter');
    await pane.waitFor('"a" is not an answer');
    expect(existsSync(join(repo, 'granted.txt'))).toBe(false);
    expect(
      lastSessionEvents(home)
        .filter((e) => e.type === 'gate_decision')
        .map((e) => e.data.decision),
    ).toEqual(['ask']);
    // the whole word and Enter is
    pane.type('always', 'Enter');
    await pane.waitFor('wrote it');
    expect(readFileSync(join(repo, 'granted.txt'), 'utf8')).toBe('x\n');
    const events = lastSessionEvents(home);
    expect(events.filter((e) => e.type === 'gate_decision').map((e) => e.data.decision)).toEqual([
      'ask',
      'allow',
    ]);
    // the message typed meanwhile reached the model as the person's words
    expect(events.some((e) => e.type === 'user_message' && e.data.text === 'please make a test')).toBe(true);
  }, 60_000);
});
