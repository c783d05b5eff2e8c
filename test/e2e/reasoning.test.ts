import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import {
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  requestMessages,
} from './harness.js';

describe('reasoning and cut-off answers through the real binary', () => {
  it('reasoning_content and inline <think> are kept apart: logged as reasoning, never sent back as the answer', async () => {
    const repo = gitRepo({ 'a.txt': 'alpha\n' });
    const home = keelHome();
    const server = await model([
      {
        reasoning: 'I should read a.txt first.',
        tool_calls: [{ id: 'c1', name: 'read_file', arguments: { path: 'a.txt' } }],
      },
      { text: '<think>It says alpha.</think>\n\nThe file says alpha.', chunk_size: 2 },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'what does a.txt say?'], {
      cwd: repo,
      home,
    });
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout);
    expect(doc.summary).toBe('The file says alpha.');
    const answers = lastSessionEvents(home).filter((e) => e.type === 'assistant_message');
    expect(answers.map((e) => [e.data.text, e.data.reasoning])).toEqual([
      ['', 'I should read a.txt first.'],
      ['The file says alpha.', 'It says alpha.'],
    ]);
    const second = requestMessages(chatBodies(server)[1]);
    expect(JSON.stringify(second)).not.toContain('I should read a.txt first');
  });

  it('a tool call cut at the output limit is reported as cut off, not as malformed JSON', async () => {
    const repo = gitRepo({ 'a.txt': 'alpha\n' });
    const home = keelHome();
    const server = await model([
      {
        tool_calls: [
          { id: 'c1', name: 'write_file', arguments: '{"path": "b.txt", "content": "a very long' },
        ],
        finish: 'length',
      },
      {
        text: 'I will write it in parts.',
        expect: { last_tool_result_contains: 'cut off at the output token limit' },
      },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'write b.txt'], { cwd: repo, home });
    expect(run.code).toBe(0);
    const events = lastSessionEvents(home);
    expect(events.find((e) => e.type === 'assistant_message')?.data.finish_reason).toBe('length');
    const invalid = events.find((e) => e.type === 'tool_call_invalid');
    expect(String(invalid?.data.error)).toContain('finish_reason: length');
  });

  it('an answer cut at the output limit asks the model to go on instead of passing for a finished one', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([
      { text: 'The three steps are: first,', finish: 'length' },
      { text: 'second and third.', expect: { last_user_contains: 'cut off at the output token limit' } },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'list the steps'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).summary).toBe('second and third.');
  });
});
