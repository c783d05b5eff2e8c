/** The shapes of keel serve's API (/work/notes/api-contract.md), as the page reads them. */

export type SessionState = 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';

/** A waiting question: `id` is keel's own and what an answer names; `call_id` is the model's. */
export interface Approval {
  id: string;
  call_id: string;
  tool: string;
  args: unknown;
  question: string;
  diff: string | null;
  agent: string | null;
}

export interface Session {
  session_id: string;
  mode: string;
  /** The model a person chose for the next turns (absent: the server's). */
  model?: string;
  state: SessionState;
  code: string | null;
  prompt: string;
  started_at: string;
  ended_at: string | null;
  rounds: number;
  tokens: number | { input: number; output: number };
  cost_usd: number | null;
  parent_id: string | null;
  /** A fork's: the parent's seq it branched at; null for a subagent (a child with a parent) or a root. */
  forked_at: number | null;
  children: string[];
  files_changed: string[];
  pending_approvals: Approval[];
}

export interface Run {
  run_id: string;
  /** `waiting`: a build's tests wait for a person (pending_approvals); `already_exists`: a build found them passing. */
  status: 'running' | 'waiting' | 'verified' | 'already_exists' | 'failed';
  kind?: 'fix' | 'loop' | 'build';
  /** What the run is for: a fix run's task, a build's feature. */
  title?: string;
  /** A build's: why it ended, the tests it wrote, the question they wait on, whether its fix run's log exists. */
  reason?: string | null;
  tests?: string[];
  pending_approvals?: Approval[];
  fix_run?: boolean;
  attempts: number;
  cost_usd: number | null;
  rationale: string | null;
  pr_description: string | null;
  diff: string | null;
  started_at: string;
  ended_at: string | null;
  task?: string;
  branch?: string | null;
  /** A verified fix whose branch is still there: the page offers to apply it. */
  applicable?: boolean;
  /** The routing tiers' calls and cost, from the run's ledger rows (one run read alone). */
  tiers?: Array<{ tier: string; calls: number; cost_usd: number }>;
}

/** A logged event as the page uses it: its type, its seq and its fields. */
export interface LogEvent {
  type: string;
  seq: number;
  /** When it was logged (ISO 8601), when the stream says. */
  ts?: string;
  [field: string]: unknown;
}

export interface Delta {
  kind: 'text' | 'reasoning' | 'tool_output';
  text: string;
  call_id?: string;
}
