/**
 * `keel mcp` reports this project's sessions and runs, and no other's: not a repository nested inside
 * it (a prefix of a path is not the same project), and not through an id prefix that several projects'
 * sessions share, whose "ambiguous" answer would list the other projects' ids.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { SOURCES, stdioClient } from '../e2e/mcp-harness.js';
import { git, gitRepo, writeFiles } from '../helpers/tmp.js';

async function ask(cwd: string, home: string, flags: string[], prompt: string): Promise<string> {
  const run = await keel(['ask', ...flags, '--json', prompt], { cwd, home });
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { session_id: string }).session_id;
}

/** A tool's answer: its text, and whether it is an error. */
async function call(
  client: Awaited<ReturnType<typeof stdioClient>>,
  name: string,
  args: Record<string, unknown>,
) {
  const res = (await client.callTool({ name, arguments: args })) as {
    isError?: boolean;
    content: Array<{ text: string }>;
  };
  return { isError: res.isError === true, text: res.content.map((c) => c.text).join('\n') };
}

describe('keel mcp session_status and run_status: this project only', () => {
  it("neither finds nor names a nested repository's or another project's sessions and runs", async () => {
    const server = await model([
      { text: 'outer one' },
      { text: 'outer two' },
      { text: 'inner' },
      { text: 'other' },
    ]);
    const home = keelHome();
    const flags = modelFlags(server);
    const outer = gitRepo(SOURCES);
    const inner = join(outer, 'vendor', 'inner');
    mkdirSync(inner, { recursive: true });
    writeFiles(inner, { 'README.md': '# nested\n' });
    git(inner, 'init', '-q', '-b', 'main');
    git(inner, 'add', '-A');
    git(inner, 'commit', '-q', '-m', 'nested');
    const other = gitRepo({ 'README.md': '# other\n' });
    const own = [await ask(outer, home, flags, 'outer one'), await ask(outer, home, flags, 'outer two')];
    const innerId = await ask(inner, home, flags, 'inner');
    const otherId = await ask(other, home, flags, 'other');
    // a fix run of the nested repository, as `keel fix` records its row
    const db = openDb(join(home, 'keel.db'));
    const innerRun = '20260101-000000-a1a1a1';
    new EventLog(db).createSession({
      id: innerRun,
      mode: 'fix',
      cwd: inner,
      provider: 'openai',
      model: 'test-model',
      prompt: 'INNER-FIX',
    });
    db.close();

    const client = await stdioClient(outer, home);
    const foreign = [innerId, otherId, innerRun];
    // by full id: not found, as any unknown id
    for (const id of foreign) {
      const res = await call(client, 'session_status', { session_id: id });
      expect(res.isError, id).toBe(true);
      expect(res.text).toContain('no session matches');
    }
    const run = await call(client, 'run_status', { run_id: innerRun });
    expect(run.isError).toBe(true);
    expect(run.text).not.toContain('INNER-FIX');
    // a prefix every id shares is ambiguous among this project's sessions only, and names only them
    const prefix = own[0]?.slice(0, 4) ?? '';
    expect(innerId.startsWith(prefix) && otherId.startsWith(prefix)).toBe(true);
    const ambiguous = await call(client, 'session_status', { session_id: prefix });
    expect(ambiguous.isError).toBe(true);
    expect(ambiguous.text).toContain('matches 2 sessions');
    for (const id of own) expect(ambiguous.text).toContain(id);
    // this project has no run: the prefix finds none, however many other sessions share it
    const noRun = await call(client, 'run_status', { run_id: prefix });
    expect(noRun.isError).toBe(true);
    expect(noRun.text).toContain('no run matches');
    // the lists: this project's only
    const lists = [
      await call(client, 'session_status', {}),
      await call(client, 'run_status', {}),
      ambiguous,
      noRun,
    ];
    for (const res of lists) for (const id of foreign) expect(res.text).not.toContain(id);
    expect(
      JSON.parse(lists[0]?.text ?? '')
        .sessions.map((s: { id: string }) => s.id)
        .sort(),
    ).toEqual([...own].sort());
  });
});
