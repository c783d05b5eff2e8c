import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, gitRepo } from '../helpers/tmp.js';
import {
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  requestMessages,
} from './harness.js';

/** A port nothing listens on: bind, read the port, close. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

const CONTRACT_FIELDS = [
  'session_id',
  'mode',
  'code',
  'exit_code',
  'summary',
  'rounds',
  'tokens',
  'cost_usd',
  'files_changed',
];

describe('failures end in a named code, and the log stays complete', () => {
  it('a dead endpoint exits 4 quickly, naming the URL and the cause', async () => {
    const port = await closedPort();
    const repo = gitRepo();
    const home = keelHome('[retries]\nmax = 1\nbase_delay_ms = 50\n');
    const url = `http://127.0.0.1:${port}/v1`;
    const run = await keel(['ask', '--base-url', url, '--model', 'm', '--json', 'hi'], { cwd: repo, home });
    expect(run.code).toBe(4);
    expect(run.ms).toBeLessThan(5000);
    const doc = JSON.parse(run.stdout);
    expect(doc.code).toBe('MODEL_ERROR');
    expect(doc.summary).toContain(url);
    expect(doc.summary).toContain('connection refused');
    expect(lastSessionEvents(home).at(-1)?.type).toBe('session_end');
  });

  it('retries a 429 after its Retry-After and then succeeds', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([{ error: { status: 429, retry_after: 1 } }, { text: 'OK' }]);
    const run = await keel(['ask', ...modelFlags(server), 'hi'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('OK');
    expect(run.ms).toBeGreaterThanOrEqual(1000);
    const retry = lastSessionEvents(home).find((e) => e.type === 'model_retry');
    expect(retry?.data.delay_ms).toBe(1000);
    expect(String(retry?.data.error)).toContain('429');
  });

  it('a 429 storm ends MODEL_ERROR with exit 4 once the retries are spent', async () => {
    const repo = gitRepo();
    const home = keelHome('[retries]\nmax = 2\nbase_delay_ms = 10\n');
    const storm = { error: { status: 429, retry_after: 0 } };
    const server = await model([storm, storm, storm, storm]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'hi'], { cwd: repo, home });
    expect(run.code).toBe(4);
    const doc = JSON.parse(run.stdout);
    expect(doc.code).toBe('MODEL_ERROR');
    expect(doc.summary).toContain('429');
    expect(chatBodies(server)).toHaveLength(3);
    expect(lastSessionEvents(home).filter((e) => e.type === 'model_retry')).toHaveLength(2);
  });

  it('falls back to the next model when the primary keeps failing', async () => {
    const repo = gitRepo();
    const server = await model([
      { model: 'big', error: { status: 503 } },
      { model: 'big', error: { status: 503 } },
      { model: 'small', text: 'answered by the fallback' },
    ]);
    const home = keelHome(`[retries]\nmax = 1\nbase_delay_ms = 10\n\n[[fallback_models]]\nmodel = "small"\n`);
    const run = await keel(['ask', ...modelFlags(server, 'big'), '--json', 'hi'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).summary).toBe('answered by the fallback');
    const fallback = lastSessionEvents(home).find((e) => e.type === 'model_fallback');
    expect(fallback?.data).toMatchObject({ from: 'big', to: 'small' });
  });

  it('a budget ends the run with BUDGET_EXCEEDED naming the budget, exit 1', async () => {
    const repo = gitRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' });
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
      { tool_calls: [{ name: 'read_file', arguments: { path: 'b.txt' } }] },
      { tool_calls: [{ name: 'read_file', arguments: { path: 'c.txt' } }] },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--max-rounds', '2', '--json', 'read all'], {
      cwd: repo,
      home,
    });
    expect(run.code).toBe(1);
    const doc = JSON.parse(run.stdout);
    for (const field of CONTRACT_FIELDS) expect(doc).toHaveProperty(field);
    expect(doc).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      budget: 'max_rounds',
      rounds: 2,
      exit_code: 1,
      mode: 'ask',
    });
    expect(doc.tokens.total).toBeGreaterThan(0);
    expect(doc.cost_usd).toBeNull();
  });

  it('reports a real cost when the user gives prices', async () => {
    const repo = gitRepo();
    const home = keelHome('[pricing.priced]\ninput_per_mtok = 2.0\noutput_per_mtok = 10.0\n');
    const server = await model([{ text: 'OK', usage: { prompt_tokens: 1000, completion_tokens: 100 } }]);
    const run = await keel(['ask', ...modelFlags(server, 'priced'), '--json', 'hi'], { cwd: repo, home });
    const doc = JSON.parse(run.stdout);
    expect(doc.tokens).toEqual({ input: 1000, output: 100, total: 1100 });
    expect(doc.cost_usd).toBeCloseTo(0.003, 10);
  });

  it('the same call repeated ends the run with LOOP_DETECTED', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const same = { tool_calls: [{ name: 'read_file', arguments: { path: 'README.md' } }] };
    const server = await model([same, same, same, same]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'loop'], { cwd: repo, home });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'LOOP_DETECTED' });
  });

  it('a call repeated after the files changed is progress, not a loop: read, edit, read, edit, read', async () => {
    const repo = gitRepo({ 'notes.md': 'one\n' });
    const home = keelHome();
    const read = { tool_calls: [{ name: 'read_file', arguments: { path: 'notes.md' } }] };
    const edit = (from: string, to: string) => ({
      tool_calls: [{ name: 'edit_file', arguments: { path: 'notes.md', old_string: from, new_string: to } }],
    });
    const server = await model([
      read,
      edit('one', 'two'),
      read,
      edit('two', 'three'),
      read,
      { text: 'done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'count up'], { cwd: repo, home });
    expect(JSON.parse(run.stdout), run.stderr).toMatchObject({ code: 'COMPLETED' });
    expect(readFileSync(join(repo, 'notes.md'), 'utf8')).toBe('three\n');
  });

  it('recovers a tool call the model wrote as text', async () => {
    const repo = gitRepo({ 'notes.md': 'the secret word is heron\n' });
    const home = keelHome();
    const server = await model([
      {
        text: 'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.md"}}\n</tool_call>',
      },
      { text: 'The word is heron.', expect: { last_tool_result_contains: 'heron' } },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'what is the word?'], {
      cwd: repo,
      home,
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).summary).toBe('The word is heron.');
    const assistant = lastSessionEvents(home).find((e) => e.type === 'assistant_message');
    expect(assistant?.data.recovered).toBe(1);
    // the next request carries the call as a native call, so the model sees the right format
    const history = requestMessages(chatBodies(server)[1]);
    expect(history.find((m) => m.role === 'assistant')?.tool_calls).toHaveLength(1);
  });

  it('sends broken tool-call JSON back as an error and never replays it', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'read_file', arguments: '{"path": "README.md"' }] },
      { text: 'fixed', expect: { last_tool_result_contains: 'not valid JSON' } },
    ]);
    const run = await keel(['ask', ...modelFlags(server), 'go'], { cwd: repo, home });
    expect(run.code).toBe(0);
    const replayed = JSON.stringify(chatBodies(server)[1]);
    expect(replayed).not.toContain('{\\"path\\": \\"README.md\\"');
    expect(lastSessionEvents(home).some((e) => e.type === 'tool_call_invalid')).toBe(true);
  });

  it('a model that answers in prose simply completes', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([{ text: 'I think the answer is in the README, but I will not look.' }]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'hi'], { cwd: repo, home });
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', rounds: 1 });
  });

  it('an unknown config key exits 2 naming the key and the file, and starts no session', async () => {
    const repo = gitRepo({ 'keel.toml': 'model = "x"\nmax_round = 3\n' });
    const home = keelHome();
    const run = await keel(['ask', 'hi'], { cwd: repo, home });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('keel.toml: unknown key "max_round"');
  });

  it('no prompt is a usage error that says how to give one', async () => {
    const run = await keel(['ask'], { cwd: gitRepo(), home: keelHome() });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('no prompt given');
  });

  it('reads the prompt from stdin', async () => {
    const server = await model([{ text: 'piped ok', expect: { last_user_contains: 'from a pipe' } }]);
    const run = await keel(['ask', ...modelFlags(server)], {
      cwd: gitRepo(),
      home: keelHome(),
      input: 'question from a pipe\n',
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('piped ok');
  });
});

describe('keel fix with no model configured', () => {
  it('exits 2 naming the setting, before any snapshot: no branch, no worktree, no run left behind', async () => {
    const repo = gitRepo({
      'package.json': '{"scripts":{"test":"node --test"}}\n',
      'sum.test.js': "require('node:test')('sum', () => { if (1 + 1 !== 3) throw new Error('no'); });\n",
    });
    const home = keelHome();
    const branches = git(repo, 'branch', '--list');
    const run = await keel(['fix', '--json', '--issue', 'sum is wrong'], { cwd: repo, home });
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
    expect(JSON.parse(run.stdout).error).toContain('no model configured');
    expect(git(repo, 'branch', '--list')).toBe(branches);
    expect(git(repo, 'worktree', 'list').trim().split('\n')).toHaveLength(1);
    expect(existsSync(join(home, 'worktrees')) ? readdirSync(join(home, 'worktrees')) : []).toEqual([]);
  });
});
