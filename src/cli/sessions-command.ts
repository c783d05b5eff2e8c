/** `keel sessions list|show`: read sessions back from the event log. */
import { existsSync } from 'node:fs';
import { keelPaths } from '../config/paths.js';
import { openDb } from '../store/db.js';
import { EventLog, type StoredEvent } from '../store/event-log.js';
import { EXIT } from './exit-codes.js';
import { inertLine } from './inert.js';
import { dim, red } from './render.js';

function withLog<T>(fn: (log: EventLog) => T): T | undefined {
  const path = keelPaths().db;
  if (!existsSync(path)) return undefined;
  const db = openDb(path);
  try {
    return fn(new EventLog(db));
  } finally {
    db.close();
  }
}

/** List recent sessions. */
export async function listSessions(flags: { limit: number; json?: boolean }): Promise<number> {
  const rows = withLog((log) => log.listSessions(flags.limit)) ?? [];
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ sessions: rows }, null, 2)}\n`);
    return EXIT.ok;
  }
  if (!rows.length) {
    process.stderr.write('no sessions yet\n');
    return EXIT.ok;
  }
  for (const s of rows) {
    const prompt = inertLine(s.prompt.replace(/\s+/g, ' '));
    const code = s.code ?? 'UNFINISHED';
    process.stdout.write(
      `${s.id}  ${s.mode.padEnd(4)}  ${code.padEnd(19)}  ${prompt.length > 60 ? `${prompt.slice(0, 57)}...` : prompt}\n`,
    );
  }
  return EXIT.ok;
}

/** Show one session and its events. A session with no end event was killed; its log is still complete to that point. */
export async function showSession(id: string, flags: { json?: boolean }): Promise<number> {
  const found = withLog((log) => {
    const session = log.findSession(id);
    return session ? { session, events: log.events(session.id) } : undefined;
  });
  if (!found) {
    process.stderr.write(`${red('keel:')} no session matches "${inertLine(id)}" (see keel sessions list)\n`);
    return EXIT.usage;
  }
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(found, null, 2)}\n`);
    return EXIT.ok;
  }
  const { session, events } = found;
  const where = inertLine(`${session.provider}/${session.model} · ${session.cwd}`);
  process.stdout.write(
    `session ${session.id}\nmode ${session.mode} · ${where}\ncode ${session.code ?? 'UNFINISHED (no session_end event: the process was killed)'}\n\n`,
  );
  for (const e of events)
    process.stdout.write(
      `${dim(`${String(e.seq).padStart(4)} ${e.ts.slice(11, 23)}`)} ${inertLine(describe(e))}\n`,
    );
  return EXIT.ok;
}

/** One line for an event; its text is the model's, a tool's or a hook's, so the caller makes it inert. */
function describe(e: StoredEvent): string {
  const d = e.data as { [k: string]: unknown };
  const short = (v: unknown, n = 100) => {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    const one = (s ?? '').replace(/\s+/g, ' ');
    return one.length > n ? `${one.slice(0, n - 3)}...` : one;
  };
  switch (e.type) {
    case 'user_message':
      return `user: ${short(d.text)}`;
    case 'assistant_message': {
      const calls = (d.tool_calls as Array<{ name: string }>).map((c) => c.name).join(', ');
      return `assistant: ${short(d.text, 70)}${calls ? ` [calls: ${calls}]` : ''}`;
    }
    case 'tool_start':
      return `tool ${d.tool} ${short(d.args, 80)}`;
    case 'tool_result':
      return `result ${d.tool}${d.is_error ? ' (error)' : ''}: ${short(d.output, 70)}`;
    case 'gate_decision':
      return `gate ${d.tool}: ${d.decision}${d.reason ? ` (${short(d.reason, 80)})` : ''}`;
    case 'session_end':
      return `end ${d.code}: ${short(d.reason)}`;
    default:
      return `${e.type} ${short(d, 90)}`;
  }
}
