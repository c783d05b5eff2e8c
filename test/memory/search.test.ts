import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { countArchived } from '../../src/memory/archive.js';
import { DIMS, offlineEmbed } from '../../src/memory/embed.js';
import { Memory } from '../../src/memory/memory.js';
import { fuse, VECTOR_WEIGHT } from '../../src/memory/search.js';
import { openDb } from '../../src/store/db.js';
import { tempDir } from '../helpers/tmp.js';

function memory(project = 'git:abc', now?: () => Date) {
  const db = openDb(':memory:');
  const dir = join(tempDir('keel-mem-'), 'memory-archive');
  return { db, dir, mem: new Memory(db, project, { archiveDir: dir, ...(now ? { now } : {}) }) };
}

const NOTES = [
  'Prices are shown after rounding to two decimals in the invoice view',
  'The webhook handler retries three times with backoff before giving up',
  'lookup_rate in src/rates.ts caches exchange rates for an hour',
  'STRIPE_WEBHOOK_SECRET must be set or the server refuses to start',
  'The layout lives in src/render.ts and is rendered on the server',
  'We decided to keep PostgreSQL for the ledger and SQLite for the cache',
  'Flaky test: the clock test fails near midnight UTC',
];

async function seeded() {
  const m = memory();
  for (const text of NOTES) await m.mem.add({ kind: 'note', text, author: 'user' });
  return m;
}

describe('memory search', () => {
  it('finds inflected words through the stemmer: round -> rounding, retried -> retries', async () => {
    const { mem } = await seeded();
    expect((await mem.search('round', 3))[0]?.item.text).toContain('rounding');
    expect((await mem.search('retried', 3))[0]?.item.text).toContain('retries');
  });

  it('finds what a query means through synonyms: words that share neither a word nor a subword with the note', async () => {
    const { mem } = await seeded();
    // NOTES[5] says PostgreSQL, NOTES[1] webhook retries, NOTES[6] flaky: none of the query's words
    for (const [query, want] of [
      ['which db do we use for accounting', 'PostgreSQL'],
      ['resend the callbacks', 'retries'],
      ['intermittent check that breaks at night', 'Flaky'],
    ] as const) {
      expect((await mem.search(query, 1))[0]?.item.text).toContain(want);
      expect((await mem.search(query, 1, { arm: 'bm25' }))[0]?.item.text).toContain(want);
    }
  });

  it('past FULL_SCAN_MAX items, scores only the full-text pool: never reads every vector, still finds inflections, identifiers and synonyms', async () => {
    const db = openDb(':memory:');
    const mem = new Memory(db, 'git:abc', {
      archiveDir: join(tempDir('keel-mem-'), 'memory-archive'),
      fullScanMax: 0,
    });
    for (const text of NOTES) await mem.add({ kind: 'note', text, author: 'user' });
    let fullReads = 0;
    const vectors = mem.store.vectors.bind(mem.store);
    mem.store.vectors = (...args) => {
      fullReads++;
      return vectors(...args);
    };
    for (const [query, want] of [
      ['round', 'rounding'],
      ['retried', 'retries'],
      ['src/render.ts', 'src/render.ts'],
      ['lookupRate', 'lookup_rate'],
      ['resend the callbacks', 'retries'],
    ] as const) {
      const hits = await mem.search(query, 1, { arm: 'vector' });
      expect(hits[0]?.item.text).toContain(want);
      expect((await mem.search(query, 1))[0]?.item.text).toContain(want);
    }
    expect(fullReads).toBe(0);
  });

  it('finds identifiers whole: paths, snake_case and SCREAMING_CASE', async () => {
    const { mem } = await seeded();
    expect((await mem.search('src/render.ts', 3))[0]?.item.text).toContain('src/render.ts');
    expect((await mem.search('render.ts', 3))[0]?.item.text).toContain('src/render.ts');
    expect((await mem.search('lookup_rate', 3))[0]?.item.text).toContain('lookup_rate');
    expect((await mem.search('STRIPE_WEBHOOK_SECRET', 3))[0]?.item.text).toContain('STRIPE_WEBHOOK_SECRET');
    // the joined form is what makes `lookupRate` (camelCase) find the snake_case name too
    expect((await mem.search('lookupRate', 3))[0]?.item.text).toContain('lookup_rate');
  });

  it('fuses by normalized scores: bm25 (negated) over its best + 0.5 x cosine over its best, ties to the older item', () => {
    // bm25() is lower-is-better: -4 is the better full-text match
    const fused = fuse(
      [
        { n: 1, score: -4 },
        { n: 2, score: -2 },
      ],
      [
        { n: 2, score: 0.8 },
        { n: 3, score: 0.4 },
      ],
    );
    expect(fused.map((r) => r.n)).toEqual([1, 2, 3]);
    expect(fused[0]?.score).toBeCloseTo(1);
    expect(fused[1]?.score).toBeCloseTo(2 / 4 + VECTOR_WEIGHT * 1);
    expect(fused[2]?.score).toBeCloseTo(VECTOR_WEIGHT * 0.5);
    expect(fused[1]).toMatchObject({ bm25Rank: 2, vectorRank: 1 });
    // a strong word match is not outranked by a weak vector match, as rank fusion would let it be
    expect(fuse([{ n: 7, score: -3 }], [{ n: 4, score: 0.2 }]).map((r) => r.n)).toEqual([7, 4]);
    expect(fuse([{ n: 5, score: -1 }], [{ n: 4, score: 0.9 }], 1).map((r) => r.n)).toEqual([4, 5]);
  });

  it('the vector list finds a note that shares no word with the query (subword features)', async () => {
    const { mem } = await seeded();
    const hits = await mem.search('rounded decimal', 5);
    const hit = hits.find((h) => h.item.text.includes('rounding'));
    expect(hit?.vector_rank).not.toBeNull();
  });

  it('runs each arm alone, and hybrid finds an identifier and a paraphrase that BM25 alone misses', async () => {
    const { mem } = memory();
    for (const text of [
      'fetch_rates_bulk splits currency pairs into chunks of twenty',
      'All timestamps are shown in the merchant time zone',
      'The webhook handler retries three times with backoff',
      'Payouts skip weekends and bank holidays',
    ])
      await mem.add({ kind: 'note', text, author: 'user' });
    const texts = async (query: string, arm: 'bm25' | 'vector' | 'hybrid') =>
      (await mem.search(query, 3, { arm })).map((h) => h.item.text);
    // an identifier typed without its separators, and "timezone" for "time zone": no word in common
    for (const [query, want] of [
      ['fetchrate', 'fetch_rates_bulk'],
      ['timezone handling', 'time zone'],
    ] as const) {
      expect(await texts(query, 'bm25')).toEqual([]);
      expect((await texts(query, 'vector'))[0]).toContain(want);
      expect((await texts(query, 'hybrid'))[0]).toContain(want);
    }
    // the arms really are one list each: BM25 alone has no vector ranks, vectors alone no BM25 ranks
    const bm25 = await mem.search('webhook retries', 3, { arm: 'bm25' });
    expect(bm25[0]?.item.text).toContain('retries');
    expect(bm25.every((h) => h.vector_rank === null && h.bm25_rank !== null)).toBe(true);
    const vectors = await mem.search('webhook retries', 3, { arm: 'vector' });
    expect(vectors.every((h) => h.bm25_rank === null && h.vector_rank !== null)).toBe(true);
    const hybrid = await mem.search('webhook retries', 3);
    expect(hybrid[0]).toMatchObject({ bm25_rank: 1, vector_rank: 1 });
  });

  it('finds a SCREAMING_CASE name from its camelCase form through BM25 too', async () => {
    const { mem } = memory();
    await mem.add({ kind: 'note', text: 'LEDGER_WEBHOOK_SECRET must be set before start', author: 'user' });
    await mem.add({ kind: 'note', text: 'Payouts skip weekends', author: 'user' });
    const hits = await mem.search('webhookSecret', 3, { arm: 'bm25' });
    expect(hits[0]?.item.text).toContain('LEDGER_WEBHOOK_SECRET');
  });

  it("keeps BM25 to the project even when another project's items crowd the index's top", async () => {
    const db = openDb(':memory:');
    const dir = join(tempDir('keel-mem-'), 'memory-archive');
    const a = new Memory(db, 'git:a', { archiveDir: dir });
    const b = new Memory(db, 'git:b', { archiveDir: dir });
    await b.add({ kind: 'note', text: 'webhook retries in project b', author: 'user' });
    // past the index-alone fast path's depth (8 x 50 rows): the joined query has to answer
    for (let i = 0; i < 450; i++) await a.add({ kind: 'note', text: `webhook retries ${i}`, author: 'user' });
    await b.add({ kind: 'note', text: 'the webhook of b', author: 'user' });
    const hits = await b.search('webhook', 10, { arm: 'bm25' });
    expect(hits.map((h) => h.item.text).sort()).toEqual(['the webhook of b', 'webhook retries in project b']);
    expect((await a.search('webhook', 60, { arm: 'bm25' })).every((h) => h.item.project === 'git:a')).toBe(
      true,
    );
    expect(await a.search('webhook', 60, { arm: 'bm25' })).toHaveLength(50);
  });

  it("re-embeds an older embedder's vectors (another length) on the first search", async () => {
    const { db } = await seeded();
    db.prepare('UPDATE memory_items SET vec = zeroblob(256)').run();
    const again = new Memory(db, 'git:abc', { archiveDir: join(tempDir('keel-mem-'), 'a') });
    const hits = await again.search('webhook handler', 3, { arm: 'vector' });
    expect(hits[0]?.item.text).toContain('webhook handler');
    const lengths = db.prepare('SELECT DISTINCT length(vec) AS l FROM memory_items').all();
    expect(lengths).toEqual([{ l: DIMS }]);
    // past FULL_SCAN_MAX, the pool's stale vectors are re-embedded as they come up
    db.prepare('UPDATE memory_items SET vec = zeroblob(256)').run();
    const large = new Memory(db, 'git:abc', { archiveDir: join(tempDir('keel-mem-'), 'b'), fullScanMax: 0 });
    expect((await large.search('webhook handler', 3, { arm: 'vector' }))[0]?.item.text).toContain(
      'webhook handler',
    );
    const upgraded = db.prepare('SELECT text FROM memory_items WHERE length(vec) = ?').all(DIMS);
    expect(upgraded.map((r) => (r as { text: string }).text).join('\n')).toContain('webhook handler');
  });

  it('is deterministic: the same items and query give the same order and scores', async () => {
    const a = await seeded();
    const b = await seeded();
    const strip = (hits: Awaited<ReturnType<Memory['search']>>) => hits.map((h) => [h.item.text, h.score]);
    expect(strip(await a.mem.search('webhook secret server', 5))).toEqual(
      strip(await b.mem.search('webhook secret server', 5)),
    );
    const v1 = offlineEmbed('retry the webhook', { count: 3, df: () => 1 });
    const v2 = offlineEmbed('retry the webhook', { count: 3, df: () => 1 });
    expect(v1).toHaveLength(DIMS);
    expect(Array.from(v1)).toEqual(Array.from(v2));
  });

  it('folds duplicates: same project and text refresh time and tags, no new row', async () => {
    let t = Date.parse('2026-01-01T00:00:00Z');
    const { mem } = memory('git:abc', () => new Date(t));
    const first = await mem.add({
      kind: 'note',
      text: 'Use  pnpm, not npm',
      tags: ['tooling'],
      author: 'model',
    });
    t += 60_000;
    const again = await mem.add({
      kind: 'note',
      text: 'use pnpm, not   npm',
      tags: ['build'],
      author: 'user',
    });
    expect(again.folded).toBe(true);
    expect(again.item.id).toBe(first.item.id);
    expect(again.item.tags).toEqual(['build', 'tooling']);
    expect(again.item.author).toBe('user');
    expect(mem.list()).toHaveLength(1);
    expect(mem.list()[0]?.updated_at).toBe('2026-01-01T00:01:00.000Z');
  });

  it('keeps projects apart: search and prefix lookup see only their own', async () => {
    const { db, dir } = memory();
    const a = new Memory(db, 'git:aaa', { archiveDir: dir });
    const b = new Memory(db, 'git:bbb', { archiveDir: dir });
    const { item } = await a.add({ kind: 'note', text: 'the cache is warmed at boot', author: 'user' });
    expect(await b.search('cache warmed', 5)).toEqual([]);
    expect(b.find(item.id.slice(0, 4))).toBeUndefined();
    expect(a.find(item.id.slice(0, 4))?.id).toBe(item.id);
  });

  it('archives expired items to JSONL (moved, not lost); notes never expire', async () => {
    let t = Date.parse('2026-01-01T00:00:00Z');
    const { mem, dir } = memory('git:abc', () => new Date(t));
    await mem.add({ kind: 'test_outcome', text: 'tests: 3 passed, 1 failed (parser)', author: 'user' });
    await mem.add({ kind: 'note', text: 'the parser is hand-written', author: 'user' });
    t += 13 * 86_400_000;
    expect(mem.archiveExpired()).toBe(0);
    t += 2 * 86_400_000;
    expect(mem.archiveExpired()).toBe(1);
    expect(mem.list().map((i) => i.kind)).toEqual(['note']);
    expect(await mem.search('passed failed', 5)).toHaveLength(0);
    const file = join(dir, '2026-01-16.jsonl');
    expect(existsSync(file)).toBe(true);
    expect(readFileSync(file, 'utf8')).toContain('3 passed, 1 failed');
    expect(countArchived(dir, 'git:abc')).toBe(1);
    expect(countArchived(dir, 'git:other')).toBe(0);
  });
});
