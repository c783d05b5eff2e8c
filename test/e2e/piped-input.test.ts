import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { chatBodies, keelHome, model, modelFlags, requestMessages, shell } from './harness.js';

function firstUserMessage(body: unknown): string {
  const user = requestMessages(body).filter((m) => m.role === 'user');
  return String(user[user.length - 1]?.content ?? '');
}

describe('piped input', () => {
  it('is appended to the words as a fenced block, indentation and backticks kept', async () => {
    const server = await model([{ text: 'the assertion on line 3 fails' }]);
    const repo = gitRepo();
    const log = '  FAIL test/sum.test.js\n    expected 3, got 4\n    ```not a fence end```\n';
    writeFileSync(join(repo, 'test-output.txt'), log);
    const flags = modelFlags(server).join(' ');
    const run = await shell(
      `cat test-output.txt | $KEEL ask ${flags} "why does this fail"`,
      repo,
      keelHome(),
    );
    expect(run.code).toBe(0);
    const sent = firstUserMessage(chatBodies(server)[0]);
    expect(sent).toBe(
      'why does this fail\n\n````\n  FAIL test/sum.test.js\n    expected 3, got 4\n    ```not a fence end```\n````',
    );
  });

  it('alone is the prompt, and a redirected file counts as piped too', async () => {
    const server = await model([{ text: 'one' }, { text: 'two' }]);
    const repo = gitRepo();
    writeFileSync(join(repo, 'q.txt'), 'what is in this repo?\n');
    const flags = modelFlags(server).join(' ');
    const home = keelHome();
    const alone = await shell(`$KEEL ask ${flags} < q.txt`, repo, home);
    expect(alone.code).toBe(0);
    const both = await shell(`$KEEL ask ${flags} explain < q.txt`, repo, home);
    expect(both.code).toBe(0);
    const [first, second] = chatBodies(server);
    expect(firstUserMessage(first)).toBe('what is in this repo?');
    expect(firstUserMessage(second)).toBe('explain\n\n```\nwhat is in this repo?\n```');
  });

  it('is still checked against the context window, with both numbers', async () => {
    const server = await model([{ text: 'never sent' }]);
    const repo = gitRepo();
    writeFileSync(join(repo, 'big.txt'), 'word '.repeat(40_000));
    const flags = modelFlags(server).join(' ');
    const run = await shell(
      `cat big.txt | $KEEL ask ${flags} --context-window 8192 --json "summarize"`,
      repo,
      keelHome(),
    );
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout).error).toMatch(
      /the prompt is about [\d,]+ tokens, more than the context window of 8,192 tokens/,
    );
    expect(chatBodies(server)).toHaveLength(0);
  });
});
