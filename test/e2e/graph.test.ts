import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import {
  catalogueOf,
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  requestMessages,
} from './harness.js';

const SOURCES = {
  '.gitignore': 'generated/\n',
  'src/app.ts':
    "import { helper } from './util.js';\nexport function main(): number {\n  return helper(1);\n}\n",
  'src/util.ts': 'export function helper(n: number): number {\n  return n + 1;\n}\n',
  'src/other.ts':
    "import { helper } from './util.js';\nexport class Other {\n  run() { return helper(2); }\n}\n",
  'tools/report.py': 'def report(rows):\n    return len(rows)\n',
  'generated/out.ts': 'export function ignoredByGit() {}\n',
};
const json = (text: string) => JSON.parse(text) as Record<string, unknown>;

describe('keel graph', () => {
  it('index, query and map a repository; gitignored files stay out; a second index parses nothing', async () => {
    const repo = gitRepo(SOURCES);
    const home = keelHome();
    const first = await keel(['graph', 'index', '--json'], { cwd: repo, home, timeoutMs: 60_000 });
    expect(first.code).toBe(0);
    expect(json(first.stdout)).toMatchObject({ root: repo, files: 4, symbols: 5, parsed: 4, removed: 0 });
    const second = await keel(['graph', 'index'], { cwd: repo, home, timeoutMs: 60_000 });
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/^indexed 4 files, 5 symbols in \d+ ms \(0 parsed, 0 removed\)/);
    expect(second.stderr).toContain('indexing 4 files… 4 done');

    const query = await keel(['graph', 'query', 'helper', '--refs', '--json', '-C', repo], {
      cwd: '/',
      home,
    });
    expect(query.code).toBe(0);
    const doc = json(query.stdout);
    expect(doc.definitions).toEqual([
      {
        path: 'src/util.ts',
        name: 'helper',
        kind: 'function',
        signature: 'export function helper(n: number): number {',
        start_line: 1,
        end_line: 3,
        parent: null,
      },
    ]);
    expect(
      (doc.references as Array<{ path: string; line: number }>).map((r) => `${r.path}:${r.line}`),
    ).toEqual(['src/app.ts:3', 'src/other.ts:3']);
    const text = await keel(['graph', 'query', 'helper'], { cwd: repo, home });
    expect(text.stdout).toContain(
      'src/util.ts:1-3 function helper  export function helper(n: number): number {',
    );

    const outline = await keel(['graph', 'query', '--outline', 'src/other.ts', '--json'], {
      cwd: repo,
      home,
    });
    expect((json(outline.stdout).outline as Array<{ name: string }>).map((s) => s.name)).toEqual([
      'Other',
      'run',
    ]);

    // from a subfolder: the workspace is the repository root, and a typed path resolves from where one stands
    const sub = await keel(['graph', 'query', '--outline', 'other.ts', '--json'], {
      cwd: `${repo}/src`,
      home,
    });
    expect(json(sub.stdout)).toMatchObject({ path: 'src/other.ts' });

    const ignored = await keel(['graph', 'query', 'ignoredByGit', '--json'], { cwd: repo, home });
    expect(ignored.code).toBe(1);
    expect(json(ignored.stdout).definitions).toEqual([]);

    const map = await keel(['graph', 'map', 'the report in tools/report.py is wrong', '--json'], {
      cwd: repo,
      home,
    });
    expect(map.code).toBe(0);
    const m = json(map.stdout);
    expect(m.tokens as number).toBeGreaterThan(0);
    expect(m.tokens as number).toBeLessThanOrEqual(1000);
    expect((m.files as string[])[0]).toBe('tools/report.py');
    expect(m.text).toContain('src/util.ts:\n  1: export function helper(n: number): number {');
    expect(m.text).not.toContain('ignoredByGit');
    const tiny = await keel(['graph', 'map', '--tokens', '45', '--json'], { cwd: repo, home });
    expect(json(tiny.stdout).tokens as number).toBeLessThanOrEqual(45);
    expect((json(tiny.stdout).files as string[]).length).toBeLessThan(4);
  }, 120_000);

  it('errors have the one shape', async () => {
    const home = keelHome();
    const missing = await keel(['graph', 'index', '-C', '/nonexistent/x', '--json'], { cwd: '/', home });
    expect(missing.code).toBe(2);
    expect(json(missing.stdout)).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
    expect(String(json(missing.stdout).error)).toContain('/nonexistent/x');
    const noName = await keel(['graph', 'query'], { cwd: gitRepo(), home });
    expect(noName.code).toBe(2);
    expect(noName.stderr).toContain('give a NAME, or --outline FILE');
    expect(noName.stderr).not.toMatch(/\n\s+at /);
  });

  it('a session starts with the repo map in its first request, logs it, and finds a symbol with the tool', async () => {
    const repo = gitRepo(SOURCES);
    const home = keelHome();
    // indexed beforehand: the session's own incremental run then has nothing to parse within its time cap
    expect((await keel(['graph', 'index'], { cwd: repo, home, timeoutMs: 60_000 })).code).toBe(0);
    const server = await model([
      { tool_calls: [{ name: 'find_symbol', arguments: { name: 'helper' } }] },
      {
        tool_calls: [{ name: 'find_references', arguments: { name: 'helper' } }],
        expect: { last_tool_result_contains: 'src/util.ts:1-3 function helper' },
      },
      {
        tool_calls: [{ name: 'file_outline', arguments: { path: 'src/other.ts' } }],
        expect: { last_tool_result_contains: 'src/app.ts:3\nsrc/other.ts:3' },
      },
      {
        tool_calls: [{ name: 'importers', arguments: { path: 'src/util.ts' } }],
        expect: {
          last_tool_result_contains: '2-4 class Other: export class Other {\n  3-3 method run: run() {',
        },
      },
      { text: 'helper is in src/util.ts', expect: { last_tool_result_contains: 'src/app.ts\nsrc/other.ts' } },
    ]);
    const run = await keel(
      ['ask', '-m', 'where is helper defined? look at src/app.ts', ...modelFlags(server), '--json'],
      {
        cwd: repo,
        home,
        timeoutMs: 60_000,
      },
    );
    expect(run.stderr).toBe('');
    expect(json(run.stdout).code).toBe('COMPLETED');
    const [first] = chatBodies(server);
    expect(catalogueOf(first)).toContain('code_graph');
    const messages = requestMessages(first);
    const events = lastSessionEvents(home);
    const mapEvent = events.find((e) => e.type === 'repo_map');
    const data = mapEvent?.data as { text: string; tokens: number; files: string[] };
    // the identifier the task names leads, then the file it names
    expect(data.files.slice(0, 2)).toEqual(['src/util.ts', 'src/app.ts']);
    expect(data.tokens).toBeGreaterThan(0);
    expect(data.tokens).toBeLessThanOrEqual(1000);
    // exactly as sent: the system message ends with the recorded map, and the task is still the first user message
    expect(messages[0]?.role).toBe('system');
    expect(String(messages[0]?.content).endsWith(`\n\n${data.text}`)).toBe(true);
    expect(messages[1]).toMatchObject({
      role: 'user',
      content: 'where is helper defined? look at src/app.ts',
    });
    expect(events.map((e) => e.type).slice(0, 3)).toEqual(['session_start', 'repo_map', 'user_message']);
  }, 120_000);

  it('in edit mode the tools see what the session wrote', async () => {
    const repo = gitRepo(SOURCES);
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'find_symbol', arguments: { name: 'fresh' } }] },
      {
        tool_calls: [
          {
            name: 'write_file',
            arguments: { path: 'src/fresh.ts', content: 'export function fresh() {}\n' },
          },
        ],
        expect: { last_tool_result_contains: 'no definition named fresh' },
      },
      { tool_calls: [{ name: 'find_symbol', arguments: { name: 'fresh' } }] },
      { text: 'done', expect: { last_tool_result_contains: 'src/fresh.ts:1-1 function fresh' } },
    ]);
    const run = await keel(['edit', '-m', 'add fresh', ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
      timeoutMs: 90_000,
    });
    expect(json(run.stdout).code).toBe('COMPLETED');
  }, 120_000);

  it('graph.map_tokens = 0 sends no map', async () => {
    const repo = gitRepo(SOURCES);
    const home = keelHome('[graph]\nmap_tokens = 0\n');
    const server = await model([{ text: 'ok' }]);
    const run = await keel(['ask', '-m', 'hello', ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(json(run.stdout).code).toBe('COMPLETED');
    expect(String(requestMessages(chatBodies(server)[0])[0]?.content)).not.toContain('Repository map');
    expect(lastSessionEvents(home).some((e) => e.type.startsWith('repo_map'))).toBe(false);
  }, 60_000);
});

describe('indexing a large repository is never silent', () => {
  it('a session and keel graph index say how many files they index, on stderr; --json stdout stays one document', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 1200; i++) files[`src/m${i}.js`] = `export function f${i}() { return ${i}; }\n`;
    const repo = gitRepo(files);
    const home = keelHome();
    // a session's first index of a large repository says so before the first request
    const asked = await keel(['ask', ...modelFlags(await model([{ text: 'done' }])), 'what does f7 do'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stderr).toContain('indexing 1,200 files for the repo map');
    expect(asked.stdout).toBe('done\n');

    const indexed = await keel(['graph', 'index'], { cwd: repo, home, timeoutMs: 60_000 });
    expect(indexed.code, indexed.stderr).toBe(0);
    expect(indexed.stderr.split('\n')[0]).toBe('indexing 1,200 files…');
    const quiet = await keel(['graph', 'index', '--json'], { cwd: repo, home, timeoutMs: 60_000 });
    expect(json(quiet.stdout)).toMatchObject({ files: 1200 });
    expect(quiet.stderr).toBe('');
  });
});
