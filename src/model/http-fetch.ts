/**
 * `fetch` over node:http. Node's own fetch parses HTTP with a WebAssembly module that V8 compiles in
 * the background, and a short-lived process then waits for that compile before it can exit (measured:
 * 50-90 ms on every `keel ask`). keel talks to one model server at a time; node:http does that with
 * none of the cost. The result is a standard Response, so the openai SDK and the ollama provider use it
 * unchanged.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';

// statuses whose Response must have no body
const NULL_BODY = new Set([101, 204, 205, 304]);

function headerRecord(headers: RequestInit['headers']): Record<string, string> {
  if (!headers) return {};
  const out: Record<string, string> = {};
  if (Array.isArray(headers)) {
    for (const [k, v] of headers) if (k !== undefined && v !== undefined) out[k] = v;
  } else if (typeof (headers as Headers).forEach === 'function') {
    (headers as Headers).forEach((v, k) => {
      out[k] = v;
    });
  } else {
    for (const [k, v] of Object.entries(headers as Record<string, string>)) if (v !== undefined) out[k] = v;
  }
  return out;
}

function bodyOf(body: RequestInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  throw new TypeError('httpFetch sends only string or byte bodies');
}

export interface BodyLimit {
  /** The most bytes one line of the answer's body may have; past it the body fails with `error()`. */
  maxLineBytes: number;
  error(): Error;
}

/** A fetch-compatible function for plain HTTP(S) requests with string or byte bodies, optionally size-capped. */
export function httpFetch(
  input: string | URL | Request,
  init: RequestInit = {},
  limit?: BodyLimit,
): Promise<Response> {
  const url = typeof input === 'string' || input instanceof URL ? new URL(input) : new URL(input.url);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      url,
      { method: init.method ?? 'GET', headers: headerRecord(init.headers), ...(signal ? { signal } : {}) },
      (res) => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value === undefined) continue;
          for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
        }
        const status = res.statusCode ?? 0;
        const body = NULL_BODY.has(status) ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
        if (body === null) res.resume();
        else if (limit) {
          let line = 0; // bytes since the last newline
          res.on('data', (chunk: Buffer) => {
            const newline = chunk.lastIndexOf(10);
            line = newline < 0 ? line + chunk.length : chunk.length - newline - 1;
            if (line > limit.maxLineBytes && !res.destroyed) res.destroy(limit.error());
          });
        }
        resolve(new Response(body, { status, statusText: res.statusMessage ?? '', headers }));
      },
    );
    req.on('error', (err) => reject(signal?.aborted ? signal.reason : err));
    req.end(bodyOf(init.body));
  });
}
