/**
 * The gate's words: what a tool call does (its effect class), how it touches a path, and what a command
 * it runs comes back as. Tools declare these; the gate, the modes, the scope and the sandbox decide on them.
 */

/** Effect classes the gate decides on. Modes allow a set of these. */
export type Effect = 'read' | 'write' | 'exec' | 'memory' | 'agent';

export type Access = 'read' | 'write';

/** A path a call will touch, as the model wrote it (resolved by the gate, never trusted). */
export interface PathAccess {
  path: string;
  access: Access;
}

export interface ExecResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  truncated: boolean;
  /** Protected names (`.git`, `keel.toml`, `.keel`) the command created and keel removed again. */
  violations?: string[];
}

/** The marker put where bytes were dropped from the middle of an output (a command's, a tool result's). */
export function omittedMarker(bytes: number): string {
  return `[... ${bytes} bytes omitted ...]`;
}
