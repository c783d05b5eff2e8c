/**
 * A session's event stream (SSE) that survives server restarts: it reconnects with backoff and resumes
 * after the last seq it saw. Read with fetch rather than EventSource so every event type arrives (named
 * events need a listener per name there), the token goes in a header, and reconnect timing is ours.
 */
import { headers, scoped } from './api.js';

export interface Frame {
  event: string;
  data: string;
  id: string | null;
}

export interface StreamHandlers {
  frame(frame: Frame): void;
  /** Connected (again); `resumed` is true after a drop. */
  open(resumed: boolean): void;
  /** The stream dropped; retrying in `ms`. */
  retry(ms: number, why: string): void;
  /** The stream will not come back (the session does not exist, or the token is refused). */
  fatal(why: string): void;
}

/** Silence longer than this (the server pings every 15 s) means a dead connection. */
const IDLE_MS = 40_000;

/** Open `/v1/sessions/:id/events` from after `after()`; call the returned function to stop. */
export function openStream(id: string, after: () => number, on: StreamHandlers): () => void {
  const stop = new AbortController();
  let failures = 0;
  let opened = false;

  const run = async (): Promise<void> => {
    while (!stop.signal.aborted) {
      const attempt = new AbortController();
      const abortAttempt = () => attempt.abort();
      stop.signal.addEventListener('abort', abortAttempt);
      let idle = setTimeout(abortAttempt, IDLE_MS);
      let why = 'the stream ended';
      try {
        const seq = after();
        const res = await fetch(scoped(`/v1/sessions/${encodeURIComponent(id)}/events?after=${seq}`), {
          headers: {
            ...headers(),
            Accept: 'text/event-stream',
            ...(seq > 0 ? { 'Last-Event-ID': String(seq) } : {}),
          },
          signal: attempt.signal,
          credentials: 'omit',
          cache: 'no-store',
        });
        // after a drop, a 404 may be a server still loading its sessions: keep trying then
        if ((res.status === 404 && !opened) || res.status === 401 || res.status === 403) {
          on.fatal(`${res.status}: ${(await res.text()).slice(0, 200)}`);
          return;
        }
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        failures = 0;
        on.open(opened);
        opened = true;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        const parser = sseParser(on.frame);
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          clearTimeout(idle);
          idle = setTimeout(abortAttempt, IDLE_MS);
          parser(value);
        }
      } catch (err) {
        why = stop.signal.aborted ? 'closed' : (err as Error).message || 'the connection failed';
      } finally {
        clearTimeout(idle);
        stop.signal.removeEventListener('abort', abortAttempt);
      }
      if (stop.signal.aborted) return;
      failures += 1;
      const ms = Math.min(5000, 250 * 2 ** Math.min(failures - 1, 5)) + Math.floor(Math.random() * 100);
      on.retry(ms, why);
      await new Promise((r) => setTimeout(r, ms));
    }
  };
  void run();
  return () => stop.abort();
}

/** An incremental parser of the text/event-stream format (WHATWG HTML, "server-sent events"). */
export function sseParser(emit: (frame: Frame) => void): (chunk: string) => void {
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | null = null;
  return (chunk) => {
    buffer += chunk;
    for (;;) {
      const nl = buffer.search(/\r\n|\r|\n/);
      if (nl < 0) return;
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) emit({ event: event || 'message', data: data.join('\n'), id });
        event = '';
        data = [];
        id = null;
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
  };
}
