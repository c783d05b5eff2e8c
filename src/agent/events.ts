/** The events a session's log is made of. The log is the truth; everything else is read from it. */
import type { ImageAttachment, ToolCall } from '../model/types.js';
import type { BudgetName, TerminalCode } from './terminal.js';

export interface TokenCount {
  input: number;
  output: number;
}

/**
 * A call as the log records it. `id` is keel's own, unique in the session (`c1`, `c2`, ...): every face
 * keys a call's rows by it. `wire_id` is the provider's id when it had one keel can send back (Ollama,
 * text-written calls and some OpenAI-compatible servers number calls afresh on every answer).
 */
export type RecordedCall = ToolCall & { wire_id?: string };

/**
 * What a call is about to do, recorded in its tool_start before it does it, so a run killed mid-call can
 * be resumed without redoing an effect (agent/effect-resume.ts): a read is run again; a write names each
 * target's sha256 before and after (null: absent) and the result it returns; a command in the workspace
 * names the workspace's tree; any other effect (an MCP tool, a remote agent) says whether it is declared
 * read-only, and one that is not is never run twice.
 */
export type ToolIntent =
  | { effect: 'read' }
  | {
      effect: 'write';
      files: Array<{ path: string; before: string | null; after: string | null }>;
      result?: {
        output: string;
        is_error: boolean;
        files_changed: string[];
        diff_lines: number;
        outcome?: import('../tools/types.js').ToolOutcome;
        diff?: string;
      };
    }
  | { effect: 'worktree'; tree?: string }
  | { effect: 'other'; read_only: boolean; idempotent?: true };

/** How a resumed run settled a call the killed one left without a result. */
export type ResumedAs = 'rerun' | 'happened' | 'applied' | 'restored';

export type SessionEvent =
  | {
      type: 'session_start';
      mode: string;
      provider: string;
      model: string;
      cwd: string;
      scope: string[];
      instructions: string[];
      /** Instruction files that exist but were not read (a link out of the workspace, a FIFO, ...). */
      instructions_skipped?: Array<{ file: string; reason: string }>;
      tools: string[];
      /** The system prompt exactly as sent: a resumed session sends the same one. */
      system_prompt?: string;
      /** The process running this run of the session (a resume refuses while it is alive). */
      pid?: number;
      /** Whether the model has a price: cost is a sum (from 0) only when it does, else null. */
      priced?: boolean;
    }
  /** Memories put in the system prompt at session start (src/memory/inject.ts): which, and what they cost. */
  | { type: 'memory_injected'; project: string; ids: string[]; tokens: number; warnings?: string[] }
  /** A session reopened for another run (`keel sessions resume`, `--continue`). */
  | { type: 'session_resume'; run: number; mode: string; provider: string; model: string; pid: number }
  /** The end of the history a fork shares with its parent. */
  | { type: 'session_fork'; from: string; at: number }
  /** Older turns replaced by a summary; events from `keep_from_seq` on stay verbatim. */
  | {
      type: 'compaction';
      trigger: 'threshold' | 'overflow' | 'manual';
      summary: string;
      keep_from_seq: number;
      files: string[];
      tokens_before: number;
      tokens_after: number;
      model: string;
      usage?: TokenCount & { reported: boolean };
      cost_usd?: number | null;
    }
  /** A compaction that could not be done (the summary request failed); the run goes on without it. */
  | { type: 'compaction_failed'; trigger: 'threshold' | 'overflow' | 'manual'; error: string }
  /** The repo map sent at session start, exactly as the model gets it, with what it covers. */
  | { type: 'repo_map'; text: string; tokens: number; files: string[] }
  /** No repo map this session: the index was not ready in time, or nothing fit the budget. */
  | { type: 'repo_map_skipped'; reason: string }
  /** `images`: attached pictures by path, hash and size (their bytes are never logged: agent/images.ts). */
  | { type: 'user_message'; text: string; images?: ImageAttachment[] }
  /**
   * Tools offered from the next request on (src/tools/catalogue.ts): activated through the catalogue, or
   * by a call to a tool the mode allows that was not offered yet (`call_id`).
   */
  | { type: 'tools_activated'; tools: string[]; call_id?: string }
  /** From here on the session may use only these tools (a skill's allowed-tools, src/policy/tool-allowlist.ts). */
  | { type: 'tools_narrowed'; by: string; rules: string[]; call_id?: string }
  | {
      type: 'model_request';
      round: number;
      model: string;
      messages: number;
      est_tokens: number;
      bytes: number;
      /** Routing by difficulty (src/model/routing.ts): the tier this call went to, its score, signals and why. */
      route?: {
        tier: string;
        provider: string;
        score: number;
        signals: Record<string, number>;
        reason: string;
      };
      /** The same request again: the run that sent it first was killed before its answer was logged. */
      reissued?: true;
    }
  | { type: 'model_retry'; round: number; model: string; attempt: number; error: string; delay_ms: number }
  | { type: 'model_fallback'; round: number; from: string; to: string; error: string }
  | {
      type: 'assistant_message';
      round: number;
      model: string;
      text: string;
      tool_calls: RecordedCall[];
      /** Calls written as text that could not be parsed: in history with `{}` arguments, answered with an error. */
      invalid_calls?: Array<{ id: string; name: string }>;
      /** The model's reasoning, kept apart from its answer (never sent back as answer text). */
      reasoning?: string;
      /** Why the model stopped: 'stop', 'tool_calls', 'length' (cut at the output limit), ... */
      finish_reason?: string;
      recovered: number;
      usage: TokenCount & { reported: boolean };
      cost_usd: number | null;
      /** Milliseconds from the request to the answer's first token and to its end (the status line's ttft and tok/s). */
      timing?: { first_token_ms: number; total_ms: number };
    }
  | { type: 'tool_call_invalid'; round: number; call_id: string; tool: string; error: string }
  | {
      type: 'gate_decision';
      call_id: string;
      tool: string;
      decision: 'allow' | 'deny' | 'ask';
      reason?: string;
      deny?: string;
      /** The question a person was asked about this call (on the ask, and on the decision it settled). */
      question_id?: string;
      /** The tool and its arguments, canonical and hashed: what loop detection counts. */
      fingerprint?: string;
    }
  | {
      type: 'hook';
      event: string;
      decision: 'allow' | 'deny' | 'ask';
      reason?: string;
      hook?: string;
      tool?: string;
    }
  | { type: 'safety_net'; [key: string]: unknown }
  /** A tool call created protected names (.git, keel.toml, .keel) that keel removed after it ran. */
  | { type: 'violation'; call_id: string; tool: string; removed: string[] }
  | {
      type: 'tool_start';
      call_id: string;
      tool: string;
      args: unknown;
      sandboxed?: boolean;
      intent?: ToolIntent;
    }
  /**
   * A resumed run found a call it cannot settle: an effect keel cannot check (an MCP tool not declared
   * read-only) may have happened, or a write's target holds neither its before nor its after. The run
   * ends BLOCKED_UNCERTAIN; nothing is run again.
   */
  | { type: 'effect_uncertain'; call_id: string; tool: string; reason: string }
  | {
      type: 'tool_result';
      call_id: string;
      tool: string;
      output: string;
      is_error: boolean;
      files_changed: string[];
      diff_lines: number;
      duration_ms: number;
      /** What the call came to: exit code, test counts, lines added and removed. */
      outcome?: import('../tools/types.js').ToolOutcome;
      /** A write's change as a unified diff (cut at 400 lines), for faces to show. */
      diff?: string;
      /** The call never finished: the process running it was killed; keel did not run it again. */
      interrupted?: boolean;
      /** Each written file's sha256 after the call (null: absent). */
      files_after?: Array<{ path: string; after: string | null }>;
      /** Settled by a resumed run (see ResumedAs); absent for a call run once, as usual. */
      resumed?: ResumedAs;
      /** Written by older versions when wait_agent collected a child; no longer counted (the tree's counter is). */
      child_usage?: { input: number; output: number; cost_usd: number | null };
    }
  | {
      type: 'session_end';
      code: TerminalCode;
      reason: string;
      budget?: BudgetName;
      summary: string;
      rounds: number;
      tokens: TokenCount;
      cost_usd: number | null;
      files_changed: string[];
      /** 'length': the run's last answer was cut at the output limit (`max_output_tokens`); its text is partial. */
      finish?: 'length';
    };

export type EventType = SessionEvent['type'];
