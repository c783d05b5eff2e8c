/**
 * One raw HTTP request over node:http, what a client without an SDK (or an attacker) sends: the path
 * goes exactly as written (fetch and `new URL` would fold `..` and `%2e%2e`), Host can be forged, and a
 * large body can be streamed. Writing stops once the answer arrives, as a client that reads while it
 * writes does; a server that answered and closed while the body was still going out is fine, because
 * the answer is what counts.
 */
import { type Agent, request } from 'node:http';

export interface RawOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /**
   * A large body: `bytes` of `a` between `open` and `close`. Chunked with no Content-Length by
   * default; `declared` sets the length up front and sends only the first piece, so the server must
   * answer on the header alone.
   */
  stream?: { bytes: number; open?: string; close?: string; declared?: boolean };
  /** Default: a fresh connection per request. */
  agent?: Agent;
}

export interface RawAnswer {
  status: number;
  text: string;
}

export function rawRequest(port: number, path: string, opts: RawOptions = {}): Promise<RawAnswer> {
  const { stream } = opts;
  const headers: Record<string, string> = { ...opts.headers };
  if (stream && !stream.declared) headers['transfer-encoding'] = 'chunked';
  if (stream?.declared) {
    const frame = Buffer.byteLength(stream.open ?? '') + Buffer.byteLength(stream.close ?? '');
    headers['content-length'] = String(stream.bytes + frame);
  }
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(
      { host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers, agent: opts.agent ?? false },
      (res) => {
        answered = true;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    if (!stream) return void req.end(opts.body);
    const piece = Buffer.alloc(64 * 1024, 'a');
    req.write(stream.open ?? '');
    if (stream.declared) return void req.write(piece.subarray(0, Math.min(piece.length, stream.bytes)));
    let sent = 0;
    const pump = () => {
      while (sent < stream.bytes && !answered) {
        const n = Math.min(piece.length, stream.bytes - sent);
        sent += n;
        if (!req.write(piece.subarray(0, n))) return void req.once('drain', pump);
      }
      if (!answered) req.end(stream.close ?? '');
    };
    pump();
  });
}
