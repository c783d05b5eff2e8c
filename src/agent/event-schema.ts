/**
 * Reading a session's events back: each stored event is validated against its type before the
 * reducer sees it, so a corrupted or hand-edited log is an error that names the event, never a
 * history quietly rebuilt wrong. Only the fields the reducer and resume depend on are checked;
 * other fields pass through. Not on the hot path: live events are typed where they are made.
 */
import * as z from 'zod';
import type { StoredEvent } from '../store/event-log.js';
import type { SessionEvent } from './events.js';

/** The schemas, built on first use: a new session never reads its log back, and building them costs a few ms. */
let built: Record<string, z.ZodType> | undefined;
const schemas = (): Record<string, z.ZodType> => {
  built ??= build();
  return built;
};

function build(): Record<string, z.ZodType> {
  const tokens = z.object({ input: z.number(), output: z.number() });
  const usage = tokens.extend({ reported: z.boolean() });
  const call = z.object({
    id: z.string(),
    name: z.string(),
    arguments: z.string(),
    wire_id: z.string().optional(),
  });

  return {
    session_start: z.looseObject({
      mode: z.string(),
      provider: z.string(),
      model: z.string(),
      cwd: z.string(),
      system_prompt: z.string().optional(),
      pid: z.number().int().optional(),
      priced: z.boolean().optional(),
    }),
    session_resume: z.looseObject({
      run: z.number().int().positive(),
      mode: z.string(),
      pid: z.number().int(),
    }),
    memory_injected: z.looseObject({ project: z.string(), ids: z.array(z.string()), tokens: z.number() }),
    session_fork: z.looseObject({ from: z.string(), at: z.number().int() }),
    user_message: z.looseObject({
      text: z.string(),
      images: z
        .array(
          z.object({
            path: z.string(),
            mime: z.enum(['image/png', 'image/jpeg', 'image/gif', 'image/webp']),
            sha256: z.string().regex(/^[0-9a-f]{64}$/),
            bytes: z.number().int().nonnegative(),
          }),
        )
        .optional(),
    }),
    tools_activated: z.looseObject({ tools: z.array(z.string()) }),
    tools_narrowed: z.looseObject({ by: z.string(), rules: z.array(z.string()) }),
    repo_map: z.looseObject({ text: z.string(), tokens: z.number(), files: z.array(z.string()) }),
    model_request: z.looseObject({ round: z.number().int() }),
    assistant_message: z.looseObject({
      text: z.string(),
      tool_calls: z.array(call),
      invalid_calls: z.array(z.object({ id: z.string(), name: z.string() })).optional(),
      usage,
      cost_usd: z.number().nullable(),
    }),
    tool_call_invalid: z.looseObject({ call_id: z.string(), tool: z.string(), error: z.string() }),
    gate_decision: z.looseObject({
      call_id: z.string(),
      tool: z.string(),
      decision: z.enum(['allow', 'deny', 'ask']),
      reason: z.string().optional(),
      question_id: z.string().optional(),
      fingerprint: z.string().optional(),
    }),
    tool_start: z.looseObject({ call_id: z.string(), tool: z.string() }),
    tool_result: z.looseObject({
      call_id: z.string(),
      tool: z.string(),
      output: z.string(),
      is_error: z.boolean(),
      files_changed: z.array(z.string()),
      diff_lines: z.number(),
      diff: z.string().optional(),
      outcome: z.looseObject({}).optional(),
      child_usage: z
        .object({ input: z.number(), output: z.number(), cost_usd: z.number().nullable() })
        .optional(),
    }),
    compaction: z.looseObject({
      summary: z.string(),
      keep_from_seq: z.number().int(),
      files: z.array(z.string()),
      usage: usage.optional(),
      cost_usd: z.number().nullable().optional(),
    }),
    session_end: z.looseObject({ code: z.string(), tokens, cost_usd: z.number().nullable() }),
  };
}

/** A stored event that does not match its type. */
export class EventLogError extends Error {
  override name = 'EventLogError';
}

/** The typed event of a stored row, or an EventLogError naming the session, seq and field. */
export function parseEvent(stored: StoredEvent): SessionEvent {
  const schema = schemas()[stored.type];
  if (schema) {
    const parsed = schema.safeParse(stored.data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
      throw new EventLogError(
        `session ${stored.session_id}: event ${stored.seq} (${stored.type}) is not valid${where}: ${issue?.message ?? 'bad shape'}`,
      );
    }
  }
  // types the reducer does not read (hooks, safety net, retries, ...) are kept as they were written
  return { type: stored.type, ...stored.data } as SessionEvent;
}

/** Every event of a stored log, validated, in seq order. */
export function parseEvents(stored: StoredEvent[]): Array<{ seq: number; event: SessionEvent }> {
  return stored.map((s) => ({ seq: s.seq, event: parseEvent(s) }));
}
