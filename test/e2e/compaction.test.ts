import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import {
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  offeredTools,
  requestMessages,
} from './harness.js';

/** About 850 tokens of text no two lines alike, marked so a test can see where it went. */
function bigFile(mark: string): string {
  return Array.from({ length: 110 }, (_, i) => `${mark} line ${i}: value ${(i * 7919) % 10007}\n`).join('');
}

// usage reported on every turn keeps the estimates at characters / 4, so the numbers below hold
const usage = { usage: { prompt_tokens: 100, completion_tokens: 10 } };
const read = (path: string) => ({ tool_calls: [{ name: 'read_file', arguments: { path } }], ...usage });
const files = { 'f1.txt': bigFile('FIRST'), 'f2.txt': bigFile('SECOND'), 'f3.txt': bigFile('THIRD') };
// the system prompt and 15 tool schemas (ask mode) are about 1,400 tokens: the threshold (0.8 of this, against the
// estimate plus its 30% margin) falls between the second file's result and the third's, so the third read passes it
const WINDOW = 8000;
const MARGIN = 1.3;
const SUMMARY = 'SUMMARY: read f1.txt, f2.txt and f3.txt; all hold numbered values.';

describe('compaction', () => {
  it('passing the threshold folds older turns into a summary, keeps the task and the newest turn, and goes on', async () => {
    const repo = gitRepo(files);
    const home = keelHome();
    const server = await model([
      read('f1.txt'),
      read('f2.txt'),
      read('f3.txt'),
      { text: SUMMARY, ...usage },
      { text: 'All three files hold numbered values.', ...usage },
      { text: 'Still compacted.', ...usage },
    ]);
    const task = 'read the three files and tell me what they hold';
    const run = await keel(
      ['ask', ...modelFlags(server), '--context-window', String(WINDOW), '--json', task],
      {
        cwd: repo,
        home,
      },
    );
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).summary).toBe('All three files hold numbered values.');

    const events = lastSessionEvents(home);
    const compaction = events.find((e) => e.type === 'compaction');
    expect(compaction?.data).toMatchObject({ trigger: 'threshold', summary: SUMMARY });
    const before = compaction?.data.tokens_before as number;
    const after = compaction?.data.tokens_after as number;
    expect(before * MARGIN).toBeGreaterThan(0.8 * WINDOW);
    // two of the three big reads (about 1,700 tokens) are gone from the history
    expect(after).toBeLessThan(before - 1500);
    const requests = events.filter((e) => e.type === 'model_request').map((e) => e.data.est_tokens as number);
    expect(requests.at(-1)).toBe(after);

    const bodies = chatBodies(server);
    // the summary request: the older turns as a transcript, no tools
    const summaryRequest = requestMessages(bodies[3]);
    expect(summaryRequest[0]?.content).toContain('You summarize part of a coding session');
    expect(summaryRequest[1]?.content).toContain('FIRST line 0');
    expect(offeredTools(bodies[3])).toEqual([]);
    // the request after it: the task verbatim with the summary, the newest call and its result, nothing older
    const next = requestMessages(bodies[4]);
    expect(next.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(next[1]?.content).toContain(task);
    expect(next[1]?.content).toContain(SUMMARY);
    expect(JSON.stringify(next)).not.toContain('FIRST line');
    expect(next[3]?.content).toContain('THIRD line 109');

    // a resumed session sees the compacted history, as the log says it was sent
    const again = await keel(
      ['-c', ...modelFlags(server), '--context-window', String(WINDOW), '-m', 'and now?'],
      {
        cwd: repo,
        home,
      },
    );
    expect(again.code).toBe(0);
    const resumed = requestMessages(bodies.length === 6 ? bodies[5] : chatBodies(server)[5]);
    expect(resumed[1]?.content).toContain(SUMMARY);
    expect(JSON.stringify(resumed)).not.toContain('FIRST line');
    expect(resumed.at(-1)?.content).toBe('and now?');
  });

  it('a "context length exceeded" answer compacts once and sends the request once more', async () => {
    const repo = gitRepo(files);
    const home = keelHome();
    const overflow = {
      error: {
        status: 400,
        body: JSON.stringify({
          error: {
            message:
              "This model's maximum context length is 3500 tokens. However, you requested 3600 tokens.",
            type: 'BadRequestError',
          },
        }),
      },
    };
    const server = await model([
      read('f1.txt'),
      read('f2.txt'),
      overflow,
      { text: SUMMARY, ...usage },
      { text: 'Done after compacting.', ...usage },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'read two files'], { cwd: repo, home });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', summary: 'Done after compacting.' });
    const compaction = lastSessionEvents(home).find((e) => e.type === 'compaction');
    expect(compaction?.data).toMatchObject({ trigger: 'overflow' });
    const last = requestMessages(chatBodies(server)[4]);
    expect(JSON.stringify(last)).not.toContain('FIRST line');
  });

  it('a second overflow after compacting ends MODEL_ERROR instead of looping', async () => {
    const repo = gitRepo(files);
    const home = keelHome();
    const overflow = {
      error: {
        status: 400,
        // a window the compacted history fits by keel's count, so it is sent, and refused once more
        body: '{"error":{"message":"context_length_exceeded: maximum context length is 4000 tokens"}}',
      },
    };
    const server = await model([
      read('f1.txt'),
      read('f2.txt'),
      overflow,
      { text: SUMMARY, ...usage },
      overflow,
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'read two files'], { cwd: repo, home });
    expect(run.code).toBe(4);
    expect(JSON.parse(run.stdout).code).toBe('MODEL_ERROR');
    expect(chatBodies(server)).toHaveLength(5);
  });

  it('keel sessions compact ID does it on demand and says how much smaller the history is', async () => {
    const repo = gitRepo(files);
    const home = keelHome();
    const server = await model([
      read('f1.txt'),
      read('f2.txt'),
      read('f3.txt'),
      { text: 'They hold values.', ...usage },
      { text: SUMMARY, ...usage },
    ]);
    const first = JSON.parse(
      (await keel(['ask', ...modelFlags(server), '--json', 'read'], { cwd: repo, home })).stdout,
    );
    const run = await keel(['sessions', 'compact', first.session_id, ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
    });
    expect(run.stderr).toBe('');
    const doc = JSON.parse(run.stdout);
    expect(doc).toMatchObject({ session_id: first.session_id, compacted: true });
    expect(doc.tokens_after).toBeLessThan(doc.tokens_before);
    expect(lastSessionEvents(home).at(-1)).toMatchObject({ type: 'compaction', data: { trigger: 'manual' } });
    const unknown = await keel(['sessions', 'compact', 'nope', ...modelFlags(server)], { cwd: repo, home });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no session matches');
    const asJson = await keel(['sessions', 'compact', 'nope', '--json', ...modelFlags(server)], {
      cwd: repo,
      home,
    });
    expect(JSON.parse(asJson.stdout)).toMatchObject({ compacted: false, code: 'CONFIG_ERROR', exit_code: 2 });
  });
});
