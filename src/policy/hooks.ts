/** Hooks: user programs that see a JSON event on stdin and allow (exit 0) or deny (exit 2) it. */
import { relative } from 'node:path';
import { keelPaths } from '../config/paths.js';
import { changedPluginOf } from '../config/plugins.js';
import { changedPrograms, type Program } from '../config/programs.js';
import { runArgv } from './exec.js';

export const HOOK_EVENTS = ['PreToolUse', 'PostToolUse', 'UserPromptSubmit', 'SessionStart', 'Stop'] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

export interface HookSpec {
  event: HookEvent;
  /** Regex on the tool name; absent matches every tool. */
  matcher?: string;
  /** argv: never a shell string, so tool arguments can never become shell syntax. */
  command: string[];
  timeout_s: number;
  /** A PreToolUse hook that declares it reviews calls: only such a hook, naming the tool, stands in for a sandbox. */
  approver?: boolean;
  /** The files in the workspace it runs, as hashed when the config was loaded: it runs only while they are unchanged. */
  programs?: readonly Program[];
}

export interface HookPayload {
  event: HookEvent;
  session_id: string;
  cwd: string;
  mode: string;
  tool?: string;
  args?: unknown;
  result?: unknown;
  prompt?: string;
}

export type HookVerdict =
  | { decision: 'allow' }
  | { decision: 'deny'; reason: string; hook: string }
  | { decision: 'ask'; reason: string; hook: string };

/** The hooks for an event that match a tool (tool-less events match every hook of the event). */
export function matchingHooks(hooks: HookSpec[], event: HookEvent, tool?: string): HookSpec[] {
  return hooks.filter((h) => {
    if (h.event !== event) return false;
    if (!h.matcher || tool === undefined) return true;
    return new RegExp(`^(?:${h.matcher})$`).test(tool);
  });
}

/** Run every matching hook in order; the first that does not allow decides. */
export async function runHooks(
  hooks: HookSpec[],
  payload: HookPayload,
  opts: { cwd: string; signal?: AbortSignal },
): Promise<HookVerdict> {
  for (const hook of matchingHooks(hooks, payload.event, payload.tool)) {
    const verdict = await runHook(hook, payload, opts);
    if (verdict.decision !== 'allow') return verdict;
  }
  return { decision: 'allow' };
}

const MAX_OUTPUT = 64 * 1024;

/** Run one hook through the process runner: exit 0 allows, 2 denies with stderr, anything else (crash, timeout) denies. */
export async function runHook(
  hook: HookSpec,
  payload: HookPayload,
  opts: { cwd: string; signal?: AbortSignal },
): Promise<HookVerdict> {
  const name = hook.command.join(' ');
  const deny = (reason: string): HookVerdict => ({ decision: 'deny', reason, hook: name });
  if (!hook.command[0]) return deny('hook has an empty command');
  // the program keel checked (and the user trusted) is the only one it runs, whatever rewrote it since
  const changed = changedPrograms(hook.programs ?? []);
  if (changed.length)
    return deny(
      `hook ${name} was not run: ${changed.map((p) => relative(opts.cwd, p.path)).join(', ')} changed since this session checked it (keel runs only the program it checked and you trusted); the call is denied`,
    );
  // a hook from a plugin runs only while the plugin's folder is still the one the person approved
  const plugin = changedPluginOf(hook.command, keelPaths().pluginsDir);
  if (plugin) return deny(`hook ${name} was not run: ${plugin}; the call is denied`);
  let result: Awaited<ReturnType<typeof runArgv>>;
  try {
    result = await runArgv(hook.command, {
      cwd: opts.cwd,
      timeoutS: hook.timeout_s,
      signal: opts.signal ?? new AbortController().signal,
      maxOutputBytes: MAX_OUTPUT,
      input: `${JSON.stringify(payload)}\n`,
    });
  } catch (err) {
    return deny(`hook ${name} could not start: ${(err as Error).message}`);
  }
  const { exitCode: code, signal, stdout } = result;
  const stderr = result.stderr.trim();
  if (result.timedOut) return deny(`hook ${name} timed out after ${hook.timeout_s} s`);
  if (code === 0) {
    const asked = parseAsk(stdout);
    return asked ? { decision: 'ask', reason: asked, hook: name } : { decision: 'allow' };
  }
  if (code === 2) return deny(stderr || `denied by hook ${name}`);
  const how = signal ? `was killed by ${signal}` : code === null ? 'was stopped' : `exited ${code}`;
  return deny(`hook ${name} ${how}${stderr ? `: ${stderr.split('\n')[0]}` : ''}`);
}

/** A hook may print {"decision": "ask", "reason": ...} to ask the person instead of deciding. */
function parseAsk(stdout: string): string | undefined {
  const text = stdout.trim();
  if (!text.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(text) as { decision?: unknown; reason?: unknown };
    if (parsed.decision === 'ask')
      return typeof parsed.reason === 'string' ? parsed.reason : 'a hook asks to confirm';
  } catch {
    // not JSON: plain output is ignored
  }
  return undefined;
}
