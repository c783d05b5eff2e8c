import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, gitRepo } from '../helpers/tmp.js';
import { keel, keelHome, lastSessionEvents, model } from './harness.js';

describe('the ollama provider through the real binary', () => {
  it("speaks Ollama's native API and sends the server's context window as num_ctx", async () => {
    const repo = gitRepo({ 'README.md': '# hello from ollama\n' });
    const home = keelHome();
    const server = await model(
      [{ tool_calls: [{ name: 'read_file', arguments: { path: 'README.md' } }] }, { text: 'It says hello.' }],
      { contextLength: 32768 },
    );
    const run = await keel(
      ['ask', '--provider', 'ollama', '--base-url', server.ollamaUrl, '--model', 'qwen', '--json', 'what?'],
      { cwd: repo, home },
    );
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).summary).toBe('It says hello.');
    const chats = server.requests.filter((r) => r.path === '/api/chat');
    expect(chats).toHaveLength(2);
    for (const chat of chats)
      expect((chat.body as { options: { num_ctx: number } }).options.num_ctx).toBe(32768);
    expect(server.requests.some((r) => r.path === '/api/show')).toBe(true);
  });
});

describe('--commit', () => {
  it("commits only the session's own files when it completes, leaving the user's edits alone", async () => {
    const repo = gitRepo({ 'a.txt': 'a\n', 'mine.txt': 'mine\n' });
    const home = keelHome();
    // the user's own uncommitted work
    writeFileSync(join(repo, 'mine.txt'), 'my edit\n');
    const server = await model([
      { tool_calls: [{ name: 'edit_file', arguments: { path: 'a.txt', old_string: 'a', new_string: 'b' } }] },
      { text: 'done' },
    ]);
    git(repo, 'config', 'user.name', 'Ada Lovelace');
    git(repo, 'config', 'user.email', 'ada@example.com');
    const run = await keel(
      ['edit', '--base-url', server.url, '--model', 'm', '--commit', '--json', 'change a'],
      { cwd: repo, home },
    );
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout);
    expect(doc.commit).toMatch(/^[0-9a-f]{40}$/);
    // the user's identity as author (DCO and CLA checks read it); keel names itself in a trailer
    expect(git(repo, 'show', '--name-only', '--format=%an <%ae>', 'HEAD').trim().split('\n')).toEqual([
      'Ada Lovelace <ada@example.com>',
      '',
      'a.txt',
    ]);
    expect(git(repo, 'log', '-1', '--format=%(trailers:key=Keel-Session,valueonly)', 'HEAD').trim()).toBe(
      doc.session_id,
    );
    expect(git(repo, 'status', '--porcelain')).toBe(' M mine.txt\n');
    expect(lastSessionEvents(home).some((e) => e.type === 'safety_net')).toBe(true);
    // keel undo still knows the commit for its own, and takes it back
    const undo = await keel(['undo', '--yes', '--json'], { cwd: repo, home });
    expect(undo.code, undo.stdout).toBe(0);
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('a\n');
    expect(readFileSync(join(repo, 'mine.txt'), 'utf8')).toBe('my edit\n');
  });
});
