/** The context window is the one the server runs with, and `keel doctor` says so as each check finishes. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import {
  baseEnv,
  chatBodies,
  KEEL_BIN,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
} from './harness.js';

const readme = { tool_calls: [{ name: 'read_file', arguments: { path: 'README.md' } }] };

describe('keel doctor and the context window', () => {
  it('llama-server: the window from /props n_ctx, counts by /tokenize; a call to another tool is tool calling; lines wrap', async () => {
    const repo = gitRepo();
    const home = keelHome();
    // n_ctx_train would say 40960; the server runs with 4096
    const server = await model([{ tool_calls: [{ name: 'list_dir', arguments: { path: '.' } }] }], {
      models: ['test-model'],
      llamaServer: { nCtx: 4096 },
    });
    const run = await keel(['doctor', ...modelFlags(server)], { cwd: repo, home });
    const lines = run.stdout.split('\n');
    const line = (name: string) => lines.find((l) => l.slice(2).startsWith(`${name} `)) ?? '';
    const unwrapped = run.stdout.replace(/\n {19}/g, ' ');
    expect(unwrapped).toContain(
      "4096 tokens (from llama-server /props n_ctx); tokens counted by the server's /tokenize",
    );
    expect(line('endpoint')).toContain('answers (1 model)');
    expect(line('tool calling')).toContain('✓');
    expect(line('tool calling')).toContain('list_dir');
    // the sandbox says it in a few words, and what it hides follows on lines under the text
    expect(line('sandbox').length).toBeLessThanOrEqual(100);
    const at = lines.indexOf(line('sandbox'));
    expect(lines[at + 1]).toMatch(/^ {19}\S/);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(120);
    expect(run.code).toBe(0);
  });

  it('Ollama: the window of the loaded model (/api/ps) over the training length; counts estimated with a margin', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([readme], { models: ['qwen3'], contextLength: 40960, ollamaLoaded: 8192 });
    const run = await keel(['doctor', '--json'], {
      cwd: repo,
      home,
      env: { KEEL_PROVIDER: 'ollama', KEEL_BASE_URL: server.ollamaUrl, KEEL_MODEL: 'qwen3' },
    });
    const checks = JSON.parse(run.stdout).checks as Array<{ name: string; detail: string }>;
    const window = checks.find((c) => c.name === 'context window')?.detail;
    expect(window).toContain('8192 tokens (from Ollama /api/ps context_length (loaded))');
    expect(window).toContain('tokens estimated with a 30% margin');
  });

  it('prints each check as it finishes, and probes the window after a slow model with a timeout of its own', async () => {
    const repo = gitRepo();
    // the model takes longer to answer than the connect timeout the window probe gets
    const home = keelHome('[timeouts]\nconnect_s = 1\n');
    const server = await model([{ ...readme, delay_ms: 2500 }], {
      models: ['test-model'],
      llamaServer: { nCtx: 4096 },
    });
    const child = spawn(process.execPath, [KEEL_BIN, 'doctor', ...modelFlags(server)], {
      cwd: repo,
      env: baseEnv(home),
    });
    let out = '';
    let seenWith: string[] | undefined;
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      // what the server had been asked when the endpoint line came out
      if (!seenWith && out.includes('endpoint'))
        seenWith = server.requests.map((r) => `${r.method} ${r.path}`);
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    // when the endpoint line came out, the model had been asked at most: nothing after the tool-calling
    // request (answered 2.5 s later) had started, so the lines come as their checks end, not all at the end
    expect(seenWith?.filter((r) => r !== 'POST /v1/chat/completions')).toEqual(['GET /v1/models']);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toContain('GET /props');
    expect(out.indexOf('endpoint')).toBeLessThan(out.indexOf('tool calling'));
    expect(out).toContain('4096 tokens (from llama-server /props n_ctx)');
  });
});

describe('a llama-server that says the request exceeds its context', () => {
  it('takes the window from the error, and a compaction that does not fit it ends the run instead of resending', async () => {
    const repo = gitRepo({ 'a.txt': 'alpha\n'.repeat(400), 'b.txt': 'beta\n'.repeat(400) });
    const home = keelHome();
    const overflow = {
      error: {
        status: 400,
        body: JSON.stringify({
          error: {
            code: 400,
            message:
              'request (3900 tokens) exceeds the available context size (1000 tokens), try increasing it',
            type: 'exceed_context_size_error',
            n_prompt_tokens: 3900,
            n_ctx: 1000,
          },
        }),
      },
    };
    const server = await model([
      { tool_calls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
      { tool_calls: [{ name: 'read_file', arguments: { path: 'b.txt' } }] },
      overflow,
      { text: 'SUMMARY: read a.txt' },
      { text: 'sent again although it cannot fit' },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'read a.txt then b.txt'], {
      cwd: repo,
      home,
    });
    const doc = JSON.parse(run.stdout);
    expect(doc.code).toBe('MODEL_ERROR');
    expect(run.code).toBe(4);
    expect(JSON.stringify(doc)).toContain("still more than the server's context window of 1,000 tokens");
    // the summary request was the last: the history it left is still past the window, so nothing was resent
    expect(chatBodies(server)).toHaveLength(4);
    expect(lastSessionEvents(home).some((e) => e.type === 'compaction')).toBe(true);
  });

  it('with /tokenize, the compacted history is counted by the server and sent again only under its window', async () => {
    const big = (mark: string) => `${mark} ${'x'.repeat(70)}\n`.repeat(60);
    const repo = gitRepo({ 'a.txt': big('AAA'), 'b.txt': big('BBB'), 'c.txt': big('CCC') });
    const home = keelHome();
    const read = (path: string) => ({ tool_calls: [{ name: 'read_file', arguments: { path } }] });
    const M = 5000;
    const overflow = {
      error: {
        status: 400,
        body: JSON.stringify({
          error: {
            code: 400,
            message: `request (6400 tokens) exceeds the available context size (${M} tokens)`,
          },
        }),
      },
    };
    // the server runs a large window at first (no threshold compaction), then refuses: a slot was shrunk
    const server = await model(
      [
        read('a.txt'),
        read('b.txt'),
        read('c.txt'),
        overflow,
        { text: 'SUMMARY: a and b' },
        { text: 'Done.' },
      ],
      { llamaServer: { nCtx: 100_000 } },
    );
    const run = await keel(['ask', ...modelFlags(server), '--json', 'read a, b and c'], { cwd: repo, home });
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', summary: 'Done.' });
    const paths = server.requests.map((r) => r.path);
    // counted by the server: a /tokenize between the summary request and the request sent again
    const summaryAt = paths.lastIndexOf('/v1/chat/completions', paths.length - 2);
    expect(paths.slice(summaryAt).indexOf('/tokenize')).toBeGreaterThan(0);
    const again = chatBodies(server).at(-1) as {
      messages: Array<{ content: string | null }>;
      tools: unknown;
    };
    expect(JSON.stringify(again.messages)).not.toContain('AAA');
    // under M by the server's own count (a token per 3 characters of text)
    const chars =
      again.messages.reduce((n, m) => n + (m.content ?? '').length, 0) + JSON.stringify(again.tools).length;
    expect(chars / 3).toBeLessThan(M);
  });

  it("a prompt is counted on the safe side: keel's estimate plus 30% against the window", async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([{ text: 'sent although it may not fit' }]);
    // about 9,000 tokens by keel's tokenizer: under a 10,000 window by it, over it by a Qwen3 server's count
    const prompt = 'word '.repeat(9000);
    const run = await keel(['ask', ...modelFlags(server), '--context-window', '10000', '--json', prompt], {
      cwd: repo,
      home,
    });
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout).error).toMatch(
      /the prompt is about [\d,]+ tokens, more than the context window of 10,000/,
    );
    expect(chatBodies(server)).toHaveLength(0);
  });
});
