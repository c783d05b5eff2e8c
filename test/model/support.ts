/** Shared helpers for the model tests: collecting streams, free ports, quick clients. */
import { createServer } from 'node:net';
import { ModelClient, type ModelClientOptions, type ModelEntry } from '../../src/model/chain.js';
import type { ChatMessage, Delta } from '../../src/model/types.js';

/** Drain an async iterable into an array. */
export async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

/** The error a promise rejects with (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** A port nothing listens on: bind port 0, note it, close it. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** All text deltas joined. */
export function textOf(deltas: Delta[]): string {
  return deltas.flatMap((d) => (d.type === 'text' ? [d.text] : [])).join('');
}

export const user = (content: string): ChatMessage => ({ role: 'user', content });

/** Client options small enough for fast tests. */
export function fastOptions(overrides: Partial<ModelClientOptions> = {}): ModelClientOptions {
  return {
    timeouts: { firstTokenMs: 5_000, idleMs: 5_000 },
    retries: { max: 2, base_delay_ms: 10, max_delay_ms: 50 },
    cooldownS: 60,
    ...overrides,
  };
}

export function clientOf(entries: ModelEntry[], overrides: Partial<ModelClientOptions> = {}): ModelClient {
  return new ModelClient(entries, fastOptions(overrides));
}

export const signal = () => new AbortController().signal;

/** The JSON body of the n-th recorded request, as an object. */
export function bodyOf(requests: { body: unknown }[], n: number): Record<string, unknown> {
  const body = requests[n]?.body;
  if (typeof body !== 'object' || body === null) throw new Error(`request ${n} has no JSON body`);
  return body as Record<string, unknown>;
}
