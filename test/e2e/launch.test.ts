/**
 * Work before the first model request is only what that request needs (issue 26): each verb loads its
 * own code and no other verb's (which sources a loaded chunk holds comes from dist/bundle/meta.json), the
 * context-window probe asks its endpoints at once and once per process, and a new session opens no
 * memory store just to print where else the repository has memory before the model is asked.
 * Speed itself is measured in bench/ (bench/peers.mjs), never asserted here.
 */
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';
import {
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  requestMessages,
} from './harness.js';

const BUNDLE = fileURLToPath(new URL('../../dist/bundle/', import.meta.url));
const RECORDER = fileURLToPath(new URL('../helpers/record-loads.mjs', import.meta.url));

/** The sources (node_modules/… and dist/… paths) in the bundle chunks a run of `args` loaded. */
async function loadedSources(args: string[], opts: { cwd: string; home: string; input?: string }) {
  const meta = JSON.parse(readFileSync(join(BUNDLE, 'meta.json'), 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  const log = join(tempDir('keel-loads-'), 'loads');
  const run = await keel(args, {
    ...opts,
    env: { NODE_OPTIONS: `--import=${RECORDER}`, KEEL_TEST_LOADS: log },
  });
  let urls: string[] = [];
  try {
    urls = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  } catch {
    // nothing loaded through the module loader at all
  }
  const chunks = urls
    .filter((u) => u.startsWith('file:') && fileURLToPath(u).startsWith(BUNDLE))
    .map((u) => `dist/bundle/${fileURLToPath(u).slice(BUNDLE.length)}`);
  for (const chunk of chunks) expect(meta.outputs[chunk], `${chunk} in meta.json`).toBeDefined();
  const sources = chunks.flatMap((c) => Object.keys(meta.outputs[c]?.inputs ?? {}));
  return { run, chunks, sources };
}

/** The sources among `sources` that match any of `patterns`, for a readable failure. */
const matching = (sources: string[], patterns: RegExp[]) =>
  sources.filter((s) => patterns.some((p) => p.test(s)));

describe('launch: only what the first request needs', () => {
  it('--version loads nothing of the bundle, --help no config or zod, ask no other verb’s code, a completion no config, a piped chat no YAML, MCP, A2A or TUI', async () => {
    const cwd = gitRepo();
    const home = keelHome();
    const version = await loadedSources(['--version'], { cwd, home });
    expect(version.run.code).toBe(0);
    expect(version.run.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    expect(version.chunks).toEqual([]);

    const help = await loadedSources(['--help'], { cwd, home });
    expect(help.run.code).toBe(0);
    expect(help.run.stdout).toContain('Usage: keel');
    expect(help.chunks.length).toBeGreaterThan(0);
    expect(
      matching(help.sources, [
        /node_modules\/(zod|smol-toml|openai|@modelcontextprotocol|ajv|better-sqlite3)\//,
        /^dist\/(config\/(schema|load)|agent|tools|store|model)\//,
      ]),
    ).toEqual([]);

    const server = await model([{ text: 'OK' }, { text: 'OK' }]);
    const ask = await loadedSources(['ask', ...modelFlags(server), 'hi'], { cwd, home });
    expect(ask.run.code).toBe(0);
    expect(ask.run.stdout.trim()).toBe('OK');
    // the session's own code was loaded (so the check below looks at the right run)
    expect(ask.sources).toContain('dist/agent/session.js');
    expect(
      matching(ask.sources, [
        // the MCP client and its JSON-schema checker (no server is configured), A2A, the HTTP server, the TUI, PostgreSQL
        /node_modules\/(@modelcontextprotocol|ajv|ajv-formats|zod-to-json-schema|@a2a-js|hono|@hono|@mariozechner|pg)\//,
        // the YAML parser of skills' front matter: no skill, no parser
        /node_modules\/yaml\//,
        // the graph's parser: a workspace with no source to index never needs it
        /node_modules\/web-tree-sitter\//,
        /^dist\/graph\/(index|extract)\.js$/,
        // other verbs: serve, mcp, fix, chat, review
        /^dist\/(server|mcp|fix|chat)\//,
        /^dist\/cli\/(serve|fix|review|loop|demo|doctor|init|memory|graph|trust|undo|audit|runs)-command\.js$/,
        // A2A agents and the hub's tools: none is configured, and the environment names no hub
        /^dist\/tools\/(a2a|hub|hub-client)\.js$/,
        // the glob matcher and the .gitignore parser: loaded by a tool's first glob or walk outside git
        /node_modules\/(picomatch|ignore)\//,
        // zod's parts keel never calls (its compiler, deep partials): one `import { z }` keeps all of zod
        /node_modules\/zod\/v4\/(core\/(compile|json-schema-generator)|classic\/deep-partial)\.js$/,
      ]),
    ).toEqual([]);

    // a piped chat with no plugin installed: /help lists the plugins' commands (there are none) and a turn runs
    const chat = await loadedSources(['chat', ...modelFlags(server)], { cwd, home, input: '/help\nhi\n' });
    expect(chat.run.code, chat.run.stderr).toBe(0);
    expect(chat.run.stdout).toContain('OK');
    expect(chat.sources).toContain('dist/chat/plain-app.js');
    expect(
      matching(chat.sources, [
        // the YAML parser of plugin commands' front matter: no plugin, no parser
        /node_modules\/yaml\//,
        /^dist\/skills\/front-matter\.js$/,
        // the MCP client and its JSON-schema checker, A2A agents, the hub's tools: none is configured
        /node_modules\/(@modelcontextprotocol|ajv|ajv-formats|zod-to-json-schema|@a2a-js)\//,
        /^dist\/tools\/(mcp|mcp-connect|a2a|hub|hub-client)\.js$/,
        // the full-screen chat: stdin is not a terminal
        /node_modules\/@mariozechner\//,
        /^dist\/chat\/tui-app\.js$/,
      ]),
    ).toEqual([]);

    // what a completion script asks for on every Tab: the store and the workspace, not the config's schema
    const complete = await loadedSources(['__complete', 'sessions'], { cwd, home });
    expect(complete.run.code).toBe(0);
    expect(complete.run.stdout).toMatch(/^\d{8}-\d{6}-[0-9a-f]+$/m);
    expect(complete.sources).toContain('dist/store/event-log.js');
    expect(
      matching(complete.sources, [
        /node_modules\/(zod|smol-toml)\//,
        /^dist\/(config\/(schema|load)|agent)\//,
      ]),
    ).toEqual([]);
  });

  it('the window probe asks its endpoints at once, and once: the prompt check and the session share it', async () => {
    const cwd = gitRepo();
    const home = keelHome();
    const probes = ['GET /props', 'GET /api/v0/models', 'GET /v1/models'];
    const server = await model([{ text: 'OK' }], {
      models: ['test-model'],
      lmStudio: { maxContextLength: 32768, loadedContextLength: 8000 },
      // a probe asked only after the one before it answered waits here, and never gathers
      gather: { routes: probes, ms: 1500 },
    });
    // 16 KB and more is counted against the window before the session starts (cli/session-command.ts)
    const prompt = `summarise: ${'lorem ipsum dolor sit amet '.repeat(700)}`;
    expect(prompt.length).toBeGreaterThan(16 * 1024);
    const run = await keel(['ask', ...modelFlags(server), '-m', prompt], { cwd, home });
    expect(run.code, run.stderr).toBe(0);
    expect(server.gathered()).toBe(true);
    const asked = server.requests.map((r) => `${r.method} ${r.path}`);
    for (const probe of probes)
      expect(
        asked.filter((a) => a === probe),
        probe,
      ).toHaveLength(1);
    // the window still reaches the first request: at most half of it as the output limit
    expect(chatBodies(server)[0]).toMatchObject({ max_tokens: 4000 });
  });

  it('a new session says where else the repository has memory after the work, not before the first request', async () => {
    const repo = gitRepo();
    writeFiles(repo, { 'notes.txt': 'the deploy notes\n' });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'notes');
    const home = keelHome();
    expect((await keel(['memory', 'add', 'Deploy notes are in notes.txt'], { cwd: repo, home })).code).toBe(
      0,
    );
    const clone = join(tempDir('keel-clone-'), 'clone');
    cpSync(repo, clone, { recursive: true });
    const server = await model([
      { tool_calls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] },
      { text: 'the notes say deploy' },
    ]);
    const run = await keel(['ask', ...modelFlags(server), 'what do the deploy notes say?'], {
      cwd: clone,
      home,
    });
    expect(run.code, run.stderr).toBe(0);
    const note = run.stderr.indexOf(`keel memory share ${repo}`);
    const work = run.stderr.indexOf('notes.txt');
    expect(work).toBeGreaterThanOrEqual(0);
    expect(note).toBeGreaterThan(work);
  });

  it('a project with no memory embeds nothing before the first request, though an embedding model is configured', async () => {
    const cwd = gitRepo();
    const server = await model([{ text: 'OK' }]);
    const home = keelHome(`[memory]\nembedding_model = "tiny-embed"\n`);
    const run = await keel(['ask', ...modelFlags(server), 'where is the cache warmed?'], { cwd, home });
    expect(run.code, run.stderr).toBe(0);
    const paths = server.requests.map((r) => r.path);
    const chat = paths.indexOf('/v1/chat/completions');
    expect(chat).toBeGreaterThanOrEqual(0);
    expect(paths.slice(0, chat)).not.toContain('/v1/embeddings');
  });

  it("a workspace's first code index is built beside the session, not before its first request; the next session has the map", async () => {
    const cwd = gitRepo({
      'src/price.ts': 'export function round(n: number): number {\n  return Math.round(n);\n}\n',
      'src/invoice.ts':
        "import { round } from './price.js';\nexport function total(xs: number[]) {\n  return round(xs.length);\n}\n",
    });
    const home = keelHome();
    const server = await model([{ text: 'OK' }, { text: 'OK' }]);
    const first = await keel(['ask', ...modelFlags(server), 'where is total in src/invoice.ts?'], {
      cwd,
      home,
    });
    expect(first.code, first.stderr).toBe(0);
    const firstEvents = lastSessionEvents(home).map((e) => e.type);
    expect(firstEvents).toContain('repo_map_skipped');
    expect(firstEvents).not.toContain('repo_map');
    expect(String(requestMessages(chatBodies(server)[0])[0]?.content)).not.toContain('src/invoice.ts:');
    // the first session waited for its index before it ended: the next one starts with the map
    const second = await keel(['ask', ...modelFlags(server), 'where is total in src/invoice.ts?'], {
      cwd,
      home,
    });
    expect(second.code, second.stderr).toBe(0);
    expect(lastSessionEvents(home).map((e) => e.type)).toContain('repo_map');
    expect(String(requestMessages(chatBodies(server)[1])[0]?.content)).toContain('src/invoice.ts:');
  });
});
