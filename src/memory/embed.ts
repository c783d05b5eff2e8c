/**
 * Embedders: the offline one (always there, deterministic) and one on the configured endpoint
 * (Ollama `/api/embed`, OpenAI-compatible `/v1/embeddings`) when `memory.embedding_model` is set.
 *
 * The offline embedder hashes features into DIMS signed buckets: each content word (by its stem, see
 * text-features.ts), its identifier forms, and the character 3- and 4-grams of each word (so `retried` lands near `retries` and `round`
 * near `rounding`), weighted by sublinear term frequency times the word's IDF in the project's items,
 * then L2-normalized. Plain word hashing has neither the IDF nor the subword features.
 */
import { createHash } from 'node:crypto';
import { httpFetch } from '../model/http-fetch.js';
import { contentWords, identifierTerms, stem } from './text-features.js';

/** Dimensions of an offline vector (512 int8 values: 512 bytes an item; fewer made unrelated features collide). */
export const DIMS = 512;

/** Document frequencies of words in the project: how IDF is worked out. */
export interface TermStats {
  /** Items in the project. */
  count: number;
  df(term: string): number;
}

/** IDF with add-one smoothing: never zero, never negative, 1 for a word every item has. */
export function idf(stats: TermStats, term: string): number {
  return Math.log((stats.count + 1) / (stats.df(term) + 1)) + 1;
}

/** FNV-1a, 32 bits: fast, stable across runs and machines. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The words whose document frequency counts for IDF: an item's distinct content words and identifiers. */
export function statTerms(text: string): string[] {
  return [...new Set([...contentWords(text), ...identifierTerms(text)])];
}

const NGRAM_WEIGHT = 1;

/** How much a query's synonym counts next to its own words in the query vector. */
const EXTRA_WEIGHT = 0.5;

/**
 * The offline vector of a text, L2-normalized (all zeros for a text with no content words). `extra`
 * words (a query's synonyms) add their stems at EXTRA_WEIGHT, without n-grams.
 */
export function offlineEmbed(text: string, stats: TermStats, extra: string[] = []): Float32Array {
  const v = new Float32Array(DIMS);
  const tf = new Map<string, number>();
  for (const w of [...contentWords(text), ...identifierTerms(text)]) tf.set(w, (tf.get(w) ?? 0) + 1);
  const add = (feature: string, weight: number) => {
    const h = fnv1a(feature);
    v[h % DIMS] = (v[h % DIMS] ?? 0) + (h & 0x80000000 ? -weight : weight);
  };
  for (const [w, n] of tf) {
    const weight = (1 + Math.log(n)) * idf(stats, w);
    // the word by its stem, so inflections meet in one feature as they do in the full-text index
    add(`w:${stem(w)}`, weight);
    const padded = `<${w}>`;
    const grams: string[] = [];
    for (const size of [3, 4])
      for (let i = 0; i + size <= padded.length; i++) grams.push(padded.slice(i, i + size));
    // a word's n-grams together weigh about as much as the word, whatever its length
    const each = (NGRAM_WEIGHT * weight) / Math.sqrt(grams.length || 1);
    for (const g of grams) add(`g:${g}`, each);
  }
  for (const w of extra) add(`w:${stem(w)}`, EXTRA_WEIGHT * idf(stats, w));
  return normalize(v);
}

function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] = (v[i] ?? 0) / norm;
  return v;
}

/** A unit vector as int8 (x * 127): a quarter of the bytes, dot products within about 1%. */
export function quantize(v: Float32Array): Buffer {
  const out = Buffer.alloc(v.length);
  for (let i = 0; i < v.length; i++)
    out.writeInt8(Math.max(-127, Math.min(127, Math.round((v[i] ?? 0) * 127))), i);
  return out;
}

/** A Float32 vector as a BLOB, and back. */
export function floatBlob(v: ArrayLike<number>): Buffer {
  return Buffer.from(new Float32Array(Array.from(v)).buffer);
}
export function blobFloats(b: Buffer): Float32Array {
  const copy = new Uint8Array(b);
  return new Float32Array(copy.buffer, 0, Math.floor(copy.length / 4));
}

export interface EndpointSettings {
  provider: 'openai' | 'ollama' | 'scripted';
  baseUrl: string;
  model: string;
  apiKey?: string;
  timeoutMs: number;
}

/** Where the endpoint's embeddings are asked for: Ollama's `/api/embed`, or `/embeddings` under an OpenAI-compatible base. */
export function embedUrl(s: EndpointSettings): string {
  return `${s.baseUrl.replace(/\/+$/, '')}${s.provider === 'ollama' ? '/api/embed' : '/embeddings'}`;
}

/** A text hash, so a vector is never asked for twice in one process. */
const seen = new Map<string, Float32Array>();

/**
 * Vectors for texts from the configured endpoint, normalized; throws on any failure (the caller falls
 * back to the offline embedder and says so).
 */
export async function endpointEmbed(texts: string[], s: EndpointSettings): Promise<Float32Array[]> {
  const key = (t: string) => createHash('sha256').update(`${s.baseUrl}\0${s.model}\0${t}`).digest('hex');
  const missing = texts.filter((t) => !seen.has(key(t)));
  if (missing.length) {
    const ollama = s.provider === 'ollama';
    const url = embedUrl(s);
    const res = await httpFetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(s.apiKey ? { authorization: `Bearer ${s.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: s.model, input: missing }),
      signal: AbortSignal.timeout(s.timeoutMs),
    });
    if (!res.ok) throw new Error(`${url} answered ${res.status}`);
    const body = (await res.json()) as { embeddings?: unknown; data?: Array<{ embedding?: unknown }> };
    const vectors = ollama ? body.embeddings : body.data?.map((d) => d.embedding);
    if (!Array.isArray(vectors) || vectors.length !== missing.length)
      throw new Error(`${url} returned no embeddings for ${missing.length} texts`);
    vectors.forEach((vec, i) => {
      if (
        !Array.isArray(vec) ||
        vec.length === 0 ||
        !vec.every((x) => typeof x === 'number' && Number.isFinite(x))
      )
        throw new Error(`${url} returned an embedding that is not a list of numbers`);
      seen.set(key(missing[i] as string), normalize(Float32Array.from(vec as number[])));
    });
  }
  return texts.map((t) => seen.get(key(t)) as Float32Array);
}
