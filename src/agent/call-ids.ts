/**
 * A call's identity is keel's, never the provider's. Ollama numbers calls `call_0, call_1...` afresh on
 * every answer, calls recovered from text are `recovered_N` per answer, and some OpenAI-compatible
 * servers send `call_0` every round: every face keys a call's rows by its id across the session, so the
 * log records keel's own (`c1`, `c2`, ... counted over the session's life, resumes and forks included)
 * and keeps the provider's only to send back on the wire.
 */
import type { ToolCall } from '../model/types.js';
import type { StoredEvent } from '../store/event-log.js';
import type { RecordedCall } from './events.js';

/**
 * Give an answer's calls keel's ids, `before` calls having been made in the session. A native call keeps
 * its provider's id as `wire_id` when it has one no other call of this answer shares; a call written as
 * text had none (keel made one up), so keel's own goes on the wire.
 */
export function numberCalls(calls: ToolCall[], before: number, native: boolean): RecordedCall[] {
  const counts = new Map<string, number>();
  for (const c of calls) counts.set(c.id, (counts.get(c.id) ?? 0) + 1);
  return calls.map((c, i) => {
    const own = { id: `c${before + i + 1}`, name: c.name, arguments: c.arguments };
    return native && c.id && counts.get(c.id) === 1 ? { ...own, wire_id: c.id } : own;
  });
}

/**
 * A stored log as faces read it: a log written before calls had keel's ids may use one id for several
 * calls (a later answer's `call_0` is not the first answer's). Each call id an earlier answer already
 * used is renamed `ID@SEQ` (SEQ: the answer's event), on the answer and on every event about that call,
 * so no face merges two calls. A log with keel's ids comes back unchanged.
 */
export function distinctCallIds(events: StoredEvent[]): StoredEvent[] {
  const used = new Set<string>();
  let renamed = new Map<string, string>();
  return events.map((e) => {
    const d = e.data;
    if (e.type === 'assistant_message') {
      renamed = new Map();
      const rename = (c: { id?: unknown }) => {
        const id = String(c.id ?? '');
        if (!used.has(id)) {
          used.add(id);
          return c;
        }
        const fresh = `${id}@${e.seq}`;
        renamed.set(id, fresh);
        used.add(fresh);
        return { ...c, id: fresh };
      };
      const calls = Array.isArray(d.tool_calls) ? (d.tool_calls as Array<{ id?: unknown }>) : [];
      const invalid = Array.isArray(d.invalid_calls) ? (d.invalid_calls as Array<{ id?: unknown }>) : [];
      const newCalls = calls.map(rename);
      const newInvalid = invalid.map(rename);
      if (!renamed.size) return e;
      return {
        ...e,
        data: { ...d, tool_calls: newCalls, ...(d.invalid_calls ? { invalid_calls: newInvalid } : {}) },
      };
    }
    const fresh = typeof d.call_id === 'string' ? renamed.get(d.call_id) : undefined;
    return fresh ? { ...e, data: { ...d, call_id: fresh } } : e;
  });
}
