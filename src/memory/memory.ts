/**
 * One project's memory: add (folding duplicates), search, list, show, forget, export and import, over the
 * store in KEEL_HOME/keel.db. Faces (the CLI, the session tools, injection) all go through this.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Config } from '../config/schema.js';
import type { Db } from '../store/db.js';
import { archiveItems } from './archive.js';
import {
  DIMS,
  type EndpointSettings,
  endpointEmbed,
  floatBlob,
  offlineEmbed,
  quantize,
  statTerms,
  type TermStats,
} from './embed.js';
import { AUTHOR_RANK, type Author, expiryFor, type Kind, type MemoryItem } from './items.js';
import { MemoryStore } from './memory-store.js';
import { CANDIDATES, FULL_SCAN_MAX, ftsQuery, fuse, nearest, nearestAmong, POOL } from './search.js';
import { expansions } from './synonyms.js';
import { contentWords, identifierTerms } from './text-features.js';

/** Below this cosine an offline vector match is noise (shared n-grams of unrelated words). */
const OFFLINE_MIN_SIMILARITY = 0.1;

/** Which lists a search reads: both, fused (the default), or one alone. */
export type SearchArm = 'hybrid' | 'bm25' | 'vector';

export interface AddInput {
  kind: Kind;
  text: string;
  tags?: string[];
  author: Author;
  sessionId?: string | null;
  /** For imports and shares: when the item was first made. */
  createdAt?: string;
  /** For shares: the place (project key) the item came from. */
  origin?: string | null;
}

export interface AddResult {
  item: MemoryItem;
  /** True when an item with the same text was there already and was refreshed instead. */
  folded: boolean;
}

export interface SearchHit {
  item: MemoryItem;
  score: number;
  bm25_rank: number | null;
  vector_rank: number | null;
}

/** The hash duplicates fold on: the kind and the text with its spacing and case evened out. */
export function contentHash(kind: Kind, text: string): string {
  const normal = text.normalize('NFC').trim().replace(/\s+/g, ' ').toLowerCase();
  return createHash('sha256').update(`${kind}\0${normal}`).digest('hex');
}

function newId(): string {
  return randomBytes(6).toString('hex');
}

function cleanTags(tags: string[] | undefined): string[] {
  return [...new Set((tags ?? []).map((t) => t.trim()).filter(Boolean))].sort();
}

/** The endpoint settings for `memory.embedding_model`, or undefined when it is unset (offline only). */
export function embeddingSettings(config: Config, env: NodeJS.ProcessEnv): EndpointSettings | undefined {
  const model = config.memory.embedding_model;
  if (!model) return undefined;
  const apiKey = env[config.api_key_env];
  return {
    provider: config.provider,
    baseUrl: config.base_url,
    model,
    ...(apiKey ? { apiKey } : {}),
    timeoutMs: config.timeouts.connect_s * 1000,
  };
}

export class Memory {
  readonly store: MemoryStore;
  /** What went wrong without failing anything (an embedding endpoint that did not answer). */
  readonly warnings: string[] = [];
  private upgraded = false;

  constructor(
    db: Db,
    readonly project: string,
    private readonly opts: {
      embedding?: EndpointSettings;
      archiveDir: string;
      now?: () => Date;
      /** Up to this many items, the offline vector list scans every vector (FULL_SCAN_MAX; for tests and benches). */
      fullScanMax?: number;
    },
  ) {
    this.store = new MemoryStore(db);
  }

  /** The endpoint's embedding model, when one is configured. */
  get embeddingModel(): string | undefined {
    return this.opts.embedding?.model;
  }

  private now(): Date {
    return this.opts.now?.() ?? new Date();
  }

  /** Move every expired item (of any project) to the archive; returns how many moved. */
  archiveExpired(): number {
    const now = this.now();
    const items = this.store.expired(now.toISOString());
    if (!items.length) return 0;
    archiveItems(this.opts.archiveDir, items, now);
    const byProject = new Map<string, string[]>();
    for (const i of items) byProject.set(i.project, [...(byProject.get(i.project) ?? []), i.id]);
    for (const [project, ids] of byProject) this.store.remove(project, ids, statTerms);
    return items.length;
  }

  /** Endpoint vectors for texts, or undefined (with a warning) when the endpoint fails. */
  private async endpointVectors(texts: string[]): Promise<Float32Array[] | undefined> {
    const settings = this.opts.embedding;
    if (!settings) return undefined;
    try {
      return await endpointEmbed(texts, settings);
    } catch (err) {
      const why = (err as Error).message;
      this.warnings.push(`embedding model ${settings.model} failed (${why}); using the offline embedder`);
      return undefined;
    }
  }

  /** Add an item, or refresh the one with the same content (its time, expiry and tags). */
  async add(input: AddInput): Promise<AddResult> {
    const text = input.text.trim();
    if (!text) throw new Error('a memory needs some text');
    const now = this.now();
    const at = now.toISOString();
    const hash = contentHash(input.kind, text);
    const tags = cleanTags(input.tags);
    const existing = this.store.byHash(this.project, hash);
    if (existing) {
      const merged = cleanTags([...existing.tags, ...tags]);
      // a person's word outranks keel's, and keel's the model's: a fold never lowers who wrote it
      const author: Author =
        AUTHOR_RANK[input.author] > AUTHOR_RANK[existing.author] ? input.author : existing.author;
      const fields = { updated_at: at, expires_at: expiryFor(input.kind, now), tags: merged, author };
      this.store.refresh(existing.id, fields);
      return { item: { ...existing, ...fields }, folded: true };
    }
    const terms = statTerms(text);
    const stats = this.store.termStats(this.project);
    // this item counts in its own IDF, as it will for every later query
    const withSelf = { count: stats.count + 1, df: (t: string) => stats.df(t) + (terms.includes(t) ? 1 : 0) };
    const vec = quantize(offlineEmbed(text, withSelf));
    const evec = (await this.endpointVectors([text]))?.[0];
    const item: MemoryItem = {
      id: newId(),
      project: this.project,
      kind: input.kind,
      text,
      tags,
      session_id: input.sessionId ?? null,
      author: input.author,
      created_at: input.createdAt ?? at,
      updated_at: at,
      expires_at: expiryFor(input.kind, now),
      hash,
      origin: input.origin ?? null,
    };
    this.store.insert({
      ...item,
      vec,
      ...(evec && this.opts.embedding ? { evec: floatBlob(evec), evecModel: this.opts.embedding.model } : {}),
      idents: identifierTerms(text).join(' '),
      terms,
    });
    return { item, folded: false };
  }

  /**
   * The best `k` items for a query, fused from BM25 and vector similarity (see search.ts). `arm` runs one
   * list alone through the same code (for the retrieval benchmark and tests): `bm25` or `vector`, ranked
   * by that list's score alone (normalized to its best, as in the fusion).
   */
  async search(query: string, k = 10, opts: { arm?: SearchArm } = {}): Promise<SearchHit[]> {
    const arm = opts.arm ?? 'hybrid';
    const stats = this.store.termStats(this.project);
    // a project with no items has nothing to find: no index is read and no query is embedded (a session's
    // first request waits on this search)
    if (stats.count === 0) return [];
    const extra = expansions(contentWords(query));
    const match = ftsQuery(query, stats, extra);
    // a large project's vector list scores the index's best POOL rows: the BM25 list is their head
    let pool: Array<{ n: number; score: number }> | undefined;
    const poolOf = () => {
      pool ??= match ? this.store.fullText(this.project, match, POOL) : [];
      return pool;
    };
    const large = stats.count > (this.opts.fullScanMax ?? FULL_SCAN_MAX);
    const vectors =
      arm === 'bm25' ? [] : await this.vectorList(query, stats, extra, large ? poolOf : undefined);
    const bm25 =
      arm === 'vector'
        ? []
        : pool
          ? pool.slice(0, CANDIDATES)
          : match
            ? this.store.fullText(this.project, match, CANDIDATES)
            : [];
    const ranked = fuse(bm25, vectors).slice(0, k);
    const items = this.store.byRowNumbers(ranked.map((r) => r.n));
    return ranked.flatMap((r) => {
      const item = items.get(r.n);
      return item
        ? [{ item, score: r.score, bm25_rank: r.bm25Rank ?? null, vector_rank: r.vectorRank ?? null }]
        : [];
    });
  }

  /**
   * The vector list: the endpoint's vectors when one is configured and answers, else the offline ones,
   * every item's (held in memory) or, given `pool` (a project past FULL_SCAN_MAX items), only the pool's,
   * so no search, the first in a process least of all, reads every vector.
   */
  private async vectorList(
    query: string,
    stats: TermStats,
    extra: string[],
    pool?: () => Array<{ n: number }>,
  ): Promise<Array<{ n: number; score: number }>> {
    const model = this.opts.embedding?.model ?? null;
    const endpoint = model ? (await this.endpointVectors([query]))?.[0] : undefined;
    if (endpoint) {
      this.upgradeVectors(stats);
      return nearest(this.store, this.project, model, endpoint, CANDIDATES, Number.NEGATIVE_INFINITY);
    }
    const vector = offlineEmbed(query, stats, extra);
    if (!pool) {
      this.upgradeVectors(stats);
      return nearest(this.store, this.project, null, vector, CANDIDATES, OFFLINE_MIN_SIMILARITY);
    }
    const rows = this.store.vectorsOf(
      this.project,
      pool().map((r) => r.n),
    );
    const stale = rows.filter((r) => r.vec.length !== DIMS);
    if (stale.length) {
      // an older embedder's vectors, re-embedded as they come up (the full scan does all at once)
      const texts = this.store.byRowNumbers(stale.map((r) => r.n));
      for (const r of stale) r.vec = quantize(offlineEmbed(texts.get(r.n)?.text ?? '', stats));
      this.store.setVectors(stale);
    }
    return nearestAmong(rows, vector, CANDIDATES, OFFLINE_MIN_SIMILARITY);
  }

  /**
   * Re-embed, once per object, the items whose offline vector an older embedder wrote (another length):
   * they would otherwise drop out of the vector list. Their IDF is today's, as it would be for a new item.
   */
  private upgradeVectors(stats: TermStats): void {
    if (this.upgraded) return;
    this.upgraded = true;
    const stale = this.store.staleVectors(this.project, DIMS);
    if (stale.length)
      this.store.setVectors(stale.map((r) => ({ n: r.n, vec: quantize(offlineEmbed(r.text, stats)) })));
  }

  /**
   * Copy every item of another place of the same repository (`from`, a project key) here: the person said
   * yes to sharing it. Each keeps its author, session and first date, and names the place it came from (an
   * item shared there from elsewhere keeps its first place). The other place is not changed.
   */
  async shareFrom(from: string): Promise<{ shared: number; folded: number }> {
    let shared = 0;
    let folded = 0;
    for (const item of this.store.list(from)) {
      const r = await this.add({
        kind: item.kind,
        text: item.text,
        tags: item.tags,
        author: item.author,
        sessionId: item.session_id,
        createdAt: item.created_at,
        origin: item.origin ?? from,
      });
      if (r.folded) folded++;
      else shared++;
    }
    return { shared, folded };
  }

  list(opts: { kind?: Kind; limit?: number } = {}): MemoryItem[] {
    return this.store.list(this.project, opts);
  }

  /** The item an id or unique prefix names, in this project only. */
  find(prefix: string): MemoryItem | undefined {
    return this.store.find(this.project, prefix);
  }

  forget(item: MemoryItem): void {
    this.store.remove(this.project, [item.id], statTerms);
  }
}
