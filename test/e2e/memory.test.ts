import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { INJECT_HEADER, MODEL_MARK } from '../../src/memory/inject.js';
import { git, gitRepo, tempDir } from '../helpers/tmp.js';
import {
  chatBodies,
  keel,
  keelHome,
  lastSessionEvents,
  model,
  modelFlags,
  requestMessages,
} from './harness.js';

const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>;

describe('keel memory', () => {
  it('add then search finds the note through stemming, and every verb answers --json', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const add = await keel(
      [
        'memory',
        'add',
        '--json',
        '--tag',
        'ui',
        'Prices are shown after rounding to two decimals in src/render.ts',
      ],
      { cwd: repo, home },
    );
    expect(add.code).toBe(0);
    const added = json(add.stdout);
    expect(added).toMatchObject({
      folded: false,
      project: `git:${git(repo, 'rev-list', '--max-parents=0', 'HEAD').trim()}@${repo}`,
    });
    const id = added.id as string;
    await keel(['memory', 'add', 'The webhook handler retries three times before giving up'], {
      cwd: repo,
      home,
    });

    const plain = await keel(['memory', 'search', 'round'], { cwd: repo, home });
    expect(plain.code).toBe(0);
    expect(plain.stdout.split('\n')[0]).toContain(`${id}  [note, `);
    expect(plain.stdout.split('\n')[0]).toContain('rounding');

    const search = json((await keel(['memory', 'search', '--json', 'retried'], { cwd: repo, home })).stdout);
    const results = search.results as Array<Record<string, unknown>>;
    expect(results[0]).toMatchObject({
      text: expect.stringContaining('retries'),
      bm25_rank: 1,
      author: 'user',
    });
    expect(typeof results[0]?.score).toBe('number');

    const ident = json((await keel(['memory', 'search', '--json', 'render.ts'], { cwd: repo, home })).stdout);
    expect((ident.results as Array<{ id: string }>)[0]?.id).toBe(id);

    const again = json(
      (
        await keel(
          [
            'memory',
            'add',
            '--json',
            '--tag',
            'money',
            'prices are shown after rounding to two decimals in src/render.ts',
          ],
          { cwd: repo, home },
        )
      ).stdout,
    );
    expect(again).toMatchObject({ id, folded: true });

    const list = json((await keel(['memory', 'list', '--json'], { cwd: repo, home })).stdout);
    expect((list.items as unknown[]).length).toBe(2);
    // a kind with no items says so, not that the project has none
    const noDecision = await keel(['memory', 'list', '--kind', 'decision'], { cwd: repo, home });
    expect([noDecision.code, noDecision.stdout, noDecision.stderr]).toEqual([
      0,
      '',
      'no decision items in this project\n',
    ]);
    const show = json((await keel(['memory', 'show', '--json', id.slice(0, 6)], { cwd: repo, home })).stdout);
    expect(show.item).toMatchObject({ id, kind: 'note', tags: ['money', 'ui'], expires_at: null });
    const stats = json((await keel(['memory', 'stats', '--json'], { cwd: repo, home })).stdout);
    expect(stats).toMatchObject({
      items: 2,
      by_kind: { note: 2 },
      archived: 0,
      project_source: 'root-commit',
      embedder: 'offline',
    });

    const missing = await keel(['memory', 'show', '--json', 'ffffffffffff'], { cwd: repo, home });
    expect(missing.code).toBe(2);
    expect(json(missing.stdout)).toEqual({
      code: 'CONFIG_ERROR',
      exit_code: 2,
      error: expect.stringContaining('ffffffffffff'),
    });
    const badKind = await keel(['memory', 'add', '--json', '--kind', 'rumour', 'x'], { cwd: repo, home });
    expect(badKind.code).toBe(2);
    expect(json(badKind.stdout)).toMatchObject({
      code: 'CONFIG_ERROR',
      error: expect.stringContaining('rumour'),
    });
    const badDir = await keel(['memory', 'list', '--json', '-C', join(repo, 'nope')], { cwd: repo, home });
    expect(badDir.code).toBe(2);
    expect(json(badDir.stdout)).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
  });

  it("a moved clone asks before it uses its old place's memory (the key is the first commit at its place), another repository does not see it", async () => {
    const repo = gitRepo();
    const home = keelHome();
    await keel(['memory', 'add', 'The ledger uses integer cents everywhere'], { cwd: repo, home });
    const moved = join(tempDir(), 'moved');
    cpSync(repo, moved, { recursive: true });
    const asked = await keel(['memory', 'search', 'cents'], { cwd: moved, home });
    expect(asked.stdout).toBe('');
    expect(asked.stderr).toContain(`keel memory share ${repo}`);
    expect((await keel(['memory', 'share', repo], { cwd: moved, home })).stdout).toContain('shared 1 items');
    const found = await keel(['memory', 'search', 'cents'], { cwd: moved, home });
    expect(found.stdout).toContain('integer cents');
    expect(found.stdout).toContain(`shared from ${repo}`);
    // outside git the key is the canonical folder, and stats says so
    const plain = tempDir('keel-plain-');
    const stats = json((await keel(['memory', 'stats', '--json'], { cwd: plain, home })).stdout);
    expect(stats).toMatchObject({ project: `path:${plain}`, project_source: 'path', items: 0 });
    const other = gitRepo({ 'other.txt': 'another project\n' });
    const none = json((await keel(['memory', 'search', '--json', 'cents'], { cwd: other, home })).stdout);
    expect(none.results).toEqual([]);
  });

  it('export then import round-trips the items into another project; a bad line is named by its number', async () => {
    const repo = gitRepo();
    const home = keelHome();
    await keel(['memory', 'add', '--tag', 'db', 'We chose SQLite for the cache'], { cwd: repo, home });
    await keel(['memory', 'add', '--kind', 'decision', 'Retries back off exponentially'], {
      cwd: repo,
      home,
    });
    const file = join(tempDir(), 'memory.jsonl');
    const exported = await keel(['memory', 'export', '--json', '-o', file], { cwd: repo, home });
    expect(json(exported.stdout)).toMatchObject({ count: 2, file });
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(2);

    const other = gitRepo({ 'b.txt': 'b\n' });
    const imported = await keel(['memory', 'import', '--json', file], { cwd: other, home });
    expect(imported.code).toBe(0);
    expect(json(imported.stdout)).toMatchObject({ imported: 2, folded: 0 });
    const back = json((await keel(['memory', 'export', '--json'], { cwd: other, home })).stdout);
    const strip = (items: unknown) =>
      (items as Array<Record<string, unknown>>)
        .map(({ kind, text, tags, author, created_at }) => ({ kind, text, tags, author, created_at }))
        .sort((a, b) => String(a.text).localeCompare(String(b.text)));
    const original = lines.map((l) => JSON.parse(l));
    expect(strip(back.items)).toEqual(strip(original));
    // importing the same file again folds every line into the items already there
    expect(
      json((await keel(['memory', 'import', '--json', file], { cwd: other, home })).stdout),
    ).toMatchObject({ imported: 0, folded: 2 });

    writeFileSync(file, `${lines[0]}\n${JSON.stringify({ kind: 'note', text: 'no author' })}\n`);
    const bad = await keel(['memory', 'import', '--json', file], { cwd: other, home });
    expect(bad.code).toBe(2);
    expect(json(bad.stdout).error).toMatch(/line 2 is not a memory item: author/);
    writeFileSync(file, '{"kind":\n');
    const broken = await keel(['memory', 'import', file], { cwd: other, home });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/line 1 is not JSON/);
  });

  it('forget removes the item and leaves a line in the audit chain that keel audit verify accepts', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const { id } = json(
      (await keel(['memory', 'add', '--json', 'a note to drop'], { cwd: repo, home })).stdout,
    ) as { id: string };
    const forgot = await keel(['memory', 'forget', '--json', id.slice(0, 5)], { cwd: repo, home });
    expect(json(forgot.stdout)).toMatchObject({ forgot: id });
    expect(json((await keel(['memory', 'list', '--json'], { cwd: repo, home })).stdout).items).toEqual([]);
    const tail = json((await keel(['audit', 'tail', '--json'], { cwd: repo, home })).stdout);
    const line = (tail.lines as Array<Record<string, unknown>>).find((l) => l.type === 'memory_forget');
    expect(line).toMatchObject({ id, kind: 'note', author: 'user' });
    expect(JSON.stringify(line)).not.toContain('a note to drop');
    const verify = await keel(['audit', 'verify'], { cwd: repo, home });
    expect(verify.code).toBe(0);
    expect(verify.stdout).toContain('audit chain intact');
  });

  it("a note the model keeps with remember is injected into the next session's system prompt, marked as the model's", async () => {
    const repo = gitRepo();
    const home = keelHome();
    const server = await model([
      {
        task: 'FIRST',
        tool_calls: [
          {
            name: 'remember',
            arguments: { text: 'The invoice totals are rounded half-even', tags: ['money'] },
          },
        ],
      },
      { task: 'FIRST', text: 'Noted.', expect: { last_tool_result_contains: 'remembered as' } },
      { task: 'SECOND', text: 'Half-even.' },
    ]);
    const first = await keel(['ask', ...modelFlags(server), 'FIRST: how are invoice totals rounded?'], {
      cwd: repo,
      home,
    });
    expect(first.code).toBe(0);
    const [item] = json((await keel(['memory', 'list', '--json'], { cwd: repo, home })).stdout)
      .items as Array<Record<string, string>>;
    expect(item).toMatchObject({
      author: 'model',
      kind: 'note',
      text: 'The invoice totals are rounded half-even',
    });

    const second = await keel(
      ['ask', ...modelFlags(server), 'SECOND: which rounding do invoice totals use?'],
      { cwd: repo, home },
    );
    expect(second.code).toBe(0);
    const bodies = chatBodies(server);
    const system = String(requestMessages(bodies[2])[0]?.content);
    expect(system).toContain(INJECT_HEADER);
    expect(system).toContain(`The invoice totals are rounded half-even ${MODEL_MARK}`);
    const events = lastSessionEvents(home);
    expect(events.map((e) => e.type).slice(0, 2)).toEqual(['session_start', 'memory_injected']);
    expect(events[1]?.data).toMatchObject({ ids: [item?.id], project: expect.stringMatching(/^git:/) });
    // what was sent is in the log exactly as sent
    expect(events[0]?.data.system_prompt).toBe(system);
    // the first session's own request had no memory yet
    expect(String(requestMessages(bodies[0])[0]?.content)).not.toContain(INJECT_HEADER);
  });

  it('inject_tokens = 0 injects nothing; a small budget keeps only what fits', async () => {
    const repo = gitRepo();
    const home = keelHome('[memory]\ninject_tokens = 0\n');
    await keel(['memory', 'add', 'The parser is generated from grammar.peg'], { cwd: repo, home });
    const server = await model([{ text: 'ok' }]);
    const run = await keel(['ask', ...modelFlags(server), 'where does the parser come from?'], {
      cwd: repo,
      home,
    });
    expect(run.code).toBe(0);
    expect(String(requestMessages(chatBodies(server)[0])[0]?.content)).not.toContain(INJECT_HEADER);
    expect(lastSessionEvents(home).some((e) => e.type === 'memory_injected')).toBe(false);

    // (each line names its author and source now, a few tokens more than the bare text)
    const small = keelHome('[memory]\ninject_tokens = 55\n');
    await keel(['memory', 'add', 'The parser is generated from grammar.peg'], { cwd: repo, home: small });
    await keel(['memory', 'add', `The parser ${'is very long and detailed '.repeat(20)}`], {
      cwd: repo,
      home: small,
    });
    const server2 = await model([{ text: 'ok' }]);
    await keel(['ask', ...modelFlags(server2), 'where does the parser come from?'], {
      cwd: repo,
      home: small,
    });
    const system = String(requestMessages(chatBodies(server2)[0])[0]?.content);
    expect(system).toContain('grammar.peg');
    expect(system).not.toContain('very long and detailed');
    const injected = lastSessionEvents(small).find((e) => e.type === 'memory_injected');
    expect(injected?.data.tokens).toBeLessThanOrEqual(55);
    expect(injected?.data.ids).toHaveLength(1);
  });

  it('a session records what it changed and its denials as observations, found by the next search', async () => {
    const repo = gitRepo({ 'src/app.js': 'export const rate = 1;\n' });
    const home = keelHome();
    const server = await model([
      {
        tool_calls: [
          { name: 'edit_file', arguments: { path: 'src/app.js', old_string: '= 1', new_string: '= 2' } },
        ],
      },
      { tool_calls: [{ name: 'write_file', arguments: { path: '../outside.txt', content: 'x' } }] },
      { text: 'done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'bump the exchange rate'], { cwd: repo, home });
    expect(run.code).toBe(0);
    const items = json((await keel(['memory', 'list', '--json'], { cwd: repo, home })).stdout).items as Array<
      Record<string, unknown>
    >;
    const kinds = items.map((i) => i.kind).sort();
    expect(kinds).toEqual(['file_changed', 'gate_denial']);
    const changed = items.find((i) => i.kind === 'file_changed');
    expect(changed).toMatchObject({
      text: 'Files changed: "src/app.js" (task: bump the exchange rate)',
      author: 'keel',
    });
    expect(changed?.expires_at).not.toBeNull();
    const found = json(
      (await keel(['memory', 'search', '--json', 'src/app.js'], { cwd: repo, home })).stdout,
    );
    expect((found.results as Array<{ kind: string }>)[0]?.kind).toBe('file_changed');
  });

  it('uses the configured embedding model on the endpoint, and falls back to the offline embedder with a warning', async () => {
    const repo = gitRepo();
    const server = await model([]);
    const home = keelHome(`base_url = "${server.url}"\n[memory]\nembedding_model = "tiny-embed"\n`);
    const add = await keel(['memory', 'add', '--json', 'The cache is warmed at boot'], { cwd: repo, home });
    expect(json(add.stdout).warnings).toEqual([]);
    const search = json(
      (await keel(['memory', 'search', '--json', 'cache warmed'], { cwd: repo, home })).stdout,
    );
    expect((search.results as Array<{ vector_rank: number | null }>)[0]?.vector_rank).toBe(1);
    const embeds = server.requests.filter((r) => r.path === '/v1/embeddings');
    expect(embeds.length).toBe(2);
    expect(embeds[0]?.body).toMatchObject({ model: 'tiny-embed', input: ['The cache is warmed at boot'] });
    const stats = json((await keel(['memory', 'stats', '--json'], { cwd: repo, home })).stdout);
    expect(stats.embedder).toBe('tiny-embed');
    // doctor names the embedder it found, proven by one vector asked of it
    const memoryCheck = async (h: string) =>
      (
        json((await keel(['doctor', '--json'], { cwd: repo, home: h })).stdout).checks as Array<{
          name: string;
          status: string;
          detail: string;
        }>
      ).find((c) => c.name === 'memory');
    expect(await memoryCheck(home)).toMatchObject({
      status: 'ok',
      detail: `tiny-embed on OpenAI-compatible /embeddings at ${server.url}/embeddings (32 dimensions)`,
    });
    expect(server.requests.filter((r) => r.path === '/v1/embeddings').at(-1)?.body).toMatchObject({
      input: ['keel doctor'],
    });

    const ollama = keelHome(
      `provider = "ollama"\nbase_url = "${server.ollamaUrl}"\n[memory]\nembedding_model = "tiny-embed"\n`,
    );
    await keel(['memory', 'add', 'The queue drains every minute'], { cwd: repo, home: ollama });
    const drained = json(
      (await keel(['memory', 'search', '--json', 'queue drains'], { cwd: repo, home: ollama })).stdout,
    );
    expect((drained.results as Array<{ vector_rank: number | null }>)[0]?.vector_rank).toBe(1);
    expect(server.requests.filter((r) => r.path === '/api/embed').map((r) => r.body)).toEqual([
      { model: 'tiny-embed', input: ['The queue drains every minute'] },
      { model: 'tiny-embed', input: ['queue drains'] },
    ]);
    expect((await memoryCheck(ollama))?.detail).toBe(
      `tiny-embed on Ollama /api/embed at ${server.ollamaUrl}/api/embed (32 dimensions)`,
    );

    const down = keelHome('base_url = "http://127.0.0.1:9/v1"\n[memory]\nembedding_model = "tiny-embed"\n');
    await keel(['memory', 'add', 'The cache is warmed at boot'], { cwd: repo, home: down });
    const offline = await keel(['memory', 'search', 'cache'], { cwd: repo, home: down });
    expect(offline.code).toBe(0);
    expect(offline.stdout).toContain('warmed at boot');
    expect(offline.stderr).toMatch(/warning: embedding model tiny-embed failed .*offline embedder/);
    expect(await memoryCheck(down)).toMatchObject({
      status: 'warn',
      detail: expect.stringMatching(/^tiny-embed on .* failed .*uses the offline embedder$/),
    });
    expect((await memoryCheck(keelHome()))?.detail).toMatch(/^offline embedder/);
  });
});
