/** A model editing files that are not UTF-8, through the real binary: no byte it did not ask to change may change. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatBodies, keel, keelHome, model, modelFlags, requestMessages } from '../e2e/harness.js';
import { git, gitRepo } from '../helpers/tmp.js';

const latin1 = (s: string) => Buffer.from(s, 'latin1');
const utf16le = (s: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(s, 'utf16le')]);

/** The tool results the model received in the request after its tool calls. */
function toolResults(body: unknown): string[] {
  return requestMessages(body)
    .filter((m) => m.role === 'tool')
    .map((m) => String(m.content));
}

describe('edits keep bytes, through keel edit', () => {
  it('edits one line of a Latin-1 and a UTF-16 file; every other byte stays identical', async () => {
    const repo = gitRepo();
    const menu = latin1('caf\xe9 = 3\r\nna\xefve = 1\r\nprice = 9\r\n\xff end\r\n');
    const rc = utf16le('IDS_HELLO "Gr\xfc\xdfe"\r\nIDS_BYE "Tsch\xfcss"\r\n');
    writeFileSync(join(repo, 'menu.txt'), menu);
    writeFileSync(join(repo, 'app.rc'), rc);
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'legacy files');
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'read_file', arguments: { path: 'menu.txt' } }] },
      {
        expect: { last_tool_result_contains: '[encoding: Latin-1 (not valid UTF-8); edits keep it]' },
        tool_calls: [
          {
            name: 'edit_file',
            arguments: { path: 'menu.txt', old_string: 'price = 9', new_string: 'price = 10' },
          },
          // a character Latin-1 cannot hold is refused, not written as UTF-8 or as "?"
          {
            name: 'edit_file',
            arguments: { path: 'menu.txt', old_string: 'na\xefve = 1', new_string: 'na\xefve = 1 €' },
          },
          {
            name: 'edit_file',
            arguments: { path: 'app.rc', old_string: 'Tsch\xfcss', new_string: 'Auf Wiedersehen' },
          },
        ],
      },
      { text: 'Done.' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'raise the price'], { cwd: repo, home });
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout);
    expect(doc).toMatchObject({ code: 'COMPLETED' });
    expect([...doc.files_changed].sort()).toEqual(['app.rc', 'menu.txt']);

    const want = latin1('caf\xe9 = 3\r\nna\xefve = 1\r\nprice = 10\r\n\xff end\r\n');
    expect(readFileSync(join(repo, 'menu.txt')).equals(want)).toBe(true);
    expect(
      readFileSync(join(repo, 'app.rc')).equals(
        utf16le('IDS_HELLO "Gr\xfc\xdfe"\r\nIDS_BYE "Auf Wiedersehen"\r\n'),
      ),
    ).toBe(true);
    const results = toolResults(chatBodies(server)[2]);
    expect(results.some((r) => r.includes('"€" (U+20AC), which menu.txt cannot hold'))).toBe(true);
  });
});
