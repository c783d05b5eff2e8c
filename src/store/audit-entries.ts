/**
 * Which session events the audit chain records, and with which fields: an allow-list of metadata, never
 * contents (src/store/audit.ts appends what this returns).
 */
import type { AuditLog } from './audit.js';
import { type AuditEntry, canonicalJson, sha256 } from './audit-chain.js';
import type { EventLog } from './event-log.js';

const PATH_TOOLS = new Set(['read_file', 'list_dir', 'glob', 'grep', 'edit_file', 'write_file']);

/**
 * The metadata-only audit entry for a session event, or undefined when the event is not audited.
 * Unknown event types are not audited: an allow-list cannot leak a field added later.
 */
export function auditEntryFor(
  event: { readonly type: string; readonly [k: string]: unknown },
  sessionId: string,
): AuditEntry | undefined {
  const base = { type: event.type, session_id: sessionId };
  switch (event.type) {
    case 'session_start':
      return { ...base, ...pick(event, ['mode', 'provider', 'model', 'cwd']) };
    case 'gate_decision':
      return { ...base, ...pick(event, ['call_id', 'tool', 'decision', 'deny', 'reason']) };
    case 'tool_start': {
      // Arguments carry file contents and shell commands (which can hold secrets): keep the path, hash the rest.
      const args = event.args;
      const path =
        typeof event.tool === 'string' &&
        PATH_TOOLS.has(event.tool) &&
        isRecord(args) &&
        typeof args.path === 'string'
          ? { path: args.path }
          : {};
      return {
        ...base,
        ...pick(event, ['call_id', 'tool', 'sandboxed']),
        ...path,
        args_sha256: sha256(canonicalJson(args ?? null)),
      };
    }
    case 'hook': {
      // A hook's command line can carry a token; its program name says which hook decided.
      const program = typeof event.hook === 'string' ? { hook: event.hook.split(' ')[0] } : {};
      return { ...base, ...pick(event, ['event', 'tool', 'decision', 'reason']), ...program };
    }
    case 'safety_net': {
      // Where the pre-session state was saved, and which files: enough to audit an undo, no contents.
      const files = Array.isArray(event.files) ? event.files.filter(isRecord).map((f) => f.path) : undefined;
      return {
        ...base,
        ...pick(event, ['kind', 'repo', 'ref', 'commit', 'skipped']),
        ...(files ? { paths: files } : {}),
      };
    }
    case 'tool_call_invalid':
      return { ...base, ...pick(event, ['round', 'call_id', 'tool']) };
    case 'tool_result':
      return {
        ...base,
        ...pick(event, ['call_id', 'tool', 'is_error', 'files_changed', 'diff_lines', 'duration_ms']),
      };
    case 'violation':
      // Names only: which protected paths a call created and keel removed.
      return { ...base, ...pick(event, ['call_id', 'tool', 'removed']) };
    case 'model_fallback':
      // The error text is left out: a provider's message can echo a URL or a key.
      return { ...base, ...pick(event, ['round', 'from', 'to']) };
    case 'effect_uncertain':
      // a resumed run met an effect it cannot check and stopped for a person: which call, and keel's own
      // reason (the tool and the path it names, never the call's arguments)
      return { ...base, ...pick(event, ['call_id', 'tool', 'reason']) };
    case 'run_start':
      return { ...base, ...pick(event, ['mode', 'cwd', 'provider', 'model']) };
    case 'fix_resume':
      // a killed run went on from its log, in this process
      return { ...base, ...pick(event, ['pid']) };
    case 'fix_snapshot':
      return { ...base, ...pick(event, ['kind', 'branch', 'commit', 'base']) };
    case 'fix_baseline':
    case 'loop_baseline':
      return { ...base, ...pick(event, ['command', 'exit_code', 'passed', 'failed', 'failing', 'targets']) };
    case 'fix_attempt':
    case 'loop_round':
      return { ...base, ...pick(event, ['attempt', 'round', 'session_id']) };
    case 'fix_verdict':
    case 'loop_verdict':
      // the verdict itself: what a reviewer checks first
      return {
        ...base,
        ...pick(event, ['attempt', 'round', 'status', 'code', 'reason', 'files', 'regressions']),
      };
    case 'fix_end':
    case 'loop_end':
      return { ...base, ...pick(event, ['code', 'status', 'reason', 'attempts', 'iterations', 'files']) };
    case 'session_fork':
      // a fork's start is a copy of its parent's: this line is what vouches for it on resume
      return { ...base, ...pick(event, ['from', 'at']) };
    case 'session_resume':
      return { ...base, ...pick(event, ['run', 'mode', 'provider', 'model']) };
    case 'review_verdict':
      // what `keel review` decided about which diff; the reasons stay in the log
      return { ...base, ...pick(event, ['verdict', 'readable', 'kind', 'base', 'files']) };
    case 'fix_applied':
      // a verified fix fast-forwarded into a person's branch (keel runs apply, or the page)
      return { ...base, ...pick(event, ['into', 'from', 'commit', 'branch']) };
    case 'run_pruned':
      // what `keel runs prune` removed of a run: branch names and folders, nothing else
      return { ...base, ...pick(event, ['removed', 'skipped']) };
    case 'undo':
      // what `keel undo` did to a session's changes: its steps name paths, never contents
      return { ...base, ...pick(event, ['applied', 'steps', 'kept', 'cwd', 'error']) };
    case 'rewind':
      // the chat's /rewind: back to which turn, the fork that goes on, the file steps (paths, no contents)
      return { ...base, ...pick(event, ['turn', 'at', 'fork', 'applied', 'steps', 'kept', 'error']) };
    case 'compaction':
      // which part of the history the model now sees as a summary; the summary's text stays in the log
      return {
        ...base,
        ...pick(event, ['trigger', 'keep_from_seq', 'tokens_before', 'tokens_after', 'model']),
      };
    case 'routing_calibrated':
      // `keel analyze-history --apply` changed the routing bands: from what, to what, on how many runs
      return { ...base, ...pick(event, ['file', 'previous', 'thresholds', 'runs', 'heldout']) };
    case 'session_end':
      return {
        ...base,
        ...pick(event, ['code', 'budget', 'reason', 'rounds', 'tokens', 'cost_usd', 'files_changed']),
      };
    default:
      return undefined;
  }
}

function pick(event: { readonly [k: string]: unknown }, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (event[key] !== undefined) out[key] = event[key];
  return out;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Append an event to a session's (or run's) log and, through the allow-list above, its line to the audit chain. */
export function appendAudited(
  log: EventLog,
  audit: AuditLog,
  id: string,
  type: string,
  data: Record<string, unknown>,
): void {
  log.append(id, type, data);
  const entry = auditEntryFor({ type, ...data }, id);
  if (entry) audit.append(entry);
}
