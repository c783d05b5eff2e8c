import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { chatBodies, keel, keelHome, lastSessionEvents, model, modelFlags } from './harness.js';

describe('one-shot verbs show their work on stderr; stdout stays the answer', () => {
  it('edit shows each call with its outcome and the diff of every write', async () => {
    const repo = gitRepo({ 'src/app.js': 'export const answer = 41;\n' });
    const home = keelHome();
    const server = await model([
      {
        tool_calls: [
          { name: 'edit_file', arguments: { path: 'src/app.js', old_string: '41', new_string: '42' } },
          { name: 'shell', arguments: { command: 'echo checking; exit 3' } },
          {
            name: 'shell',
            arguments: {
              command: 'echo building; echo "warning: old" >&2; echo "error: no such module x" >&2; exit 1',
            },
          },
          { name: 'read_file', arguments: { path: 'src/app.js' } },
        ],
      },
      { text: 'Changed the answer to 42.' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'make it 42'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('Changed the answer to 42.\n');
    const err = run.stderr;
    expect(err).toContain('→ edit_file src/app.js');
    expect(err).toMatch(/✓ \+1 -1/);
    expect(err).toContain('-export const answer = 41;');
    expect(err).toContain('+export const answer = 42;');
    expect(err).toMatch(/→ shell echo checking; exit 3 \(sandboxed\)\n\s+✗ exit 3/);
    // a failed command shows the end of its stderr, not a label or its stdout
    expect(err).toMatch(/✗ exit 1( · [\d.]+ s)?\n\s+warning: old\n\s+error: no such module x\n/);
    // a read says how much it showed
    expect(err).toMatch(/→ read_file src\/app.js\n\s+✓ 1 line( · [\d.]+ s)?\n/);
    // the outcome and the diff are in the log, for every face
    const result = lastSessionEvents(home).find(
      (e) => e.type === 'tool_result' && e.data.tool === 'edit_file',
    );
    expect(result?.data).toMatchObject({
      outcome: { added: 1, removed: 1 },
      diff: expect.stringContaining('+++ b/src/app.js'),
    });
  });

  it('a tool call the model writes as text is run, not echoed', async () => {
    const repo = gitRepo({ 'notes.txt': 'the secret word is teal\n' });
    const home = keelHome();
    const server = await model([
      {
        text: 'Let me read it.\n<tool_call>{"name": "read_file", "arguments": {"path": "notes.txt"}}</tool_call>',
        chunk_size: 4,
      },
      { text: 'The word is teal.', expect: { last_tool_result_contains: 'teal' } },
    ]);
    const run = await keel(['ask', ...modelFlags(server), 'what is the word?'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('Let me read it.\nThe word is teal.\n');
    expect(run.stdout).not.toContain('tool_call');
    expect(run.stderr).toContain('→ read_file notes.txt');
  });

  it('--json stays one document; approvals with no one to ask refuse the run unless --skip-approvals says go on', async () => {
    const repo = gitRepo({ 'a.txt': 'one\n' });
    const home = keelHome('approvals = "all"\n');
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'two\n' } }] },
      { text: 'done' },
    ]);
    // no terminal to ask at: refused before any request, saying why and how to proceed
    const refused = await keel(['edit', '--json', ...modelFlags(server), 'write two'], { cwd: repo, home });
    expect(refused.code).toBe(2);
    const doc = JSON.parse(refused.stdout);
    expect(doc).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
    expect(doc.error).toContain('approvals = "all"');
    expect(doc.error).toContain('--skip-approvals');
    expect(chatBodies(server)).toHaveLength(0);
    const auto = await keel(['run', ...modelFlags(server), 'write two'], { cwd: repo, home });
    expect(auto.code).toBe(2);
    expect(auto.stderr).toContain('keel run asks no one');
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('one\n');

    const run = await keel(['edit', '--json', '--skip-approvals', ...modelFlags(server), 'write two'], {
      cwd: repo,
      home,
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', files_changed: ['a.txt'] });
    expect(run.stderr).toBe('');
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe('two\n');
    // the question is in the log, and so is why no one was asked: the policy alone allowed it
    const gate = lastSessionEvents(home)
      .filter((e) => e.type === 'gate_decision')
      .map((e) => e.data.decision);
    expect(gate).toEqual(['ask', 'allow']);
  });
});
