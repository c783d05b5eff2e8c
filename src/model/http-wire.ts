/**
 * Requests to a model server over node:http, answered as node's own streams. fetch's Headers and
 * Response are undici, which Node loads on first use: 20–50 ms in every process on a 2-core machine
 * (measured, issue 26), paid before the first model request. The session's path (the window probe and
 * the Chat Completions stream) goes through here instead; http-fetch.ts stays for callers that want a
 * Response.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { BodyLimit } from './http-fetch.js';

export interface WireAnswer {
  status: number;
  /** A response header (the first value of a repeated one), lower-case name. */
  header(name: string): string | undefined;
  body: IncomingMessage;
}

export interface WireRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** Send a request; resolves with the status and the body as a stream once the headers arrive. */
export function send(url: string, init: WireRequest): Promise<WireAnswer> {
  const target = new URL(url);
  const { signal } = init;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      target,
      { method: init.method, headers: init.headers, ...(signal ? { signal } : {}) },
      (res) => {
        resolve({
          status: res.statusCode ?? 0,
          header: (name) => {
            const v = res.headers[name];
            return Array.isArray(v) ? v[0] : v;
          },
          body: res,
        });
      },
    );
    req.on('error', (err) => reject(signal?.aborted ? signal.reason : err));
    req.end(init.body);
  });
}

/** The whole body as text. */
export async function readText(body: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of body) parts.push(chunk as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

/** The body's lines (without their line ends); a line longer than `limit.maxLineBytes` fails with `limit.error()`. */
export async function* lines(body: IncomingMessage, limit?: BodyLimit): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = '';
  let pendingBytes = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    const newline = buf.lastIndexOf(10);
    pendingBytes = newline < 0 ? pendingBytes + buf.length : buf.length - newline - 1;
    if (limit && pendingBytes > limit.maxLineBytes) {
      body.destroy();
      throw limit.error();
    }
    pending += decoder.decode(buf, { stream: true });
    if (newline < 0) continue;
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const line of parts) yield line.endsWith('\r') ? line.slice(0, -1) : line;
  }
  pending += decoder.decode();
  if (pending) yield pending.endsWith('\r') ? pending.slice(0, -1) : pending;
}

/** Server-sent events: each event's name (undefined for a plain message) and its data lines joined. */
export async function* serverEvents(
  body: IncomingMessage,
  limit?: BodyLimit,
): AsyncGenerator<{ event: string | undefined; data: string }> {
  let event: string | undefined;
  let data: string[] = [];
  for await (const line of lines(body, limit)) {
    if (line === '') {
      if (data.length) yield { event, data: data.join('\n') };
      event = undefined;
      data = [];
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
  }
  if (data.length) yield { event, data: data.join('\n') };
}
