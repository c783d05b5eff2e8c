/** Hooks: user programs that see a JSON event on stdin and allow (exit 0) or deny (exit 2) it. */
import { spawn } from 'node:child_process';

export const HOOK_EVENTS = ['PreToolUse', 'PostToolUse', 'UserPromptSubmit', 'SessionStart', 'Stop'] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

export interface HookSpec {
  event: HookEvent;
  /** Regex on the tool name; absent matches every tool. */
  matcher?: string;
  /** argv: never a shell string, so tool arguments can never become shell syntax. */
  command: string[];
  timeout_s: number;
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

/** Run one hook: exit 0 allows, 2 denies with stderr, anything else (crash, timeout) denies. */
export function runHook(
  hook: HookSpec,
  payload: HookPayload,
  opts: { cwd: string; signal?: AbortSignal },
): Promise<HookVerdict> {
  const name = hook.command.join(' ');
  const deny = (reason: string): HookVerdict => ({ decision: 'deny', reason, hook: name });
  return new Promise((resolve) => {
    const [file, ...args] = hook.command;
    if (!file) return resolve(deny('hook has an empty command'));
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const child = spawn(file, args, { cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, hook.timeout_s * 1000);
    opts.signal?.addEventListener('abort', kill, { once: true });
    child.stdout.on('data', (d: Buffer) => {
      if (stdout.length < MAX_OUTPUT) stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < MAX_OUTPUT) stderr += d.toString();
    });
    // a hook that exits without reading stdin must not crash keel with EPIPE
    child.stdin.on('error', () => {});
    child.stdin.end(`${JSON.stringify(payload)}\n`);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve(deny(`hook ${name} could not start: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', kill);
      if (timedOut) return resolve(deny(`hook ${name} timed out after ${hook.timeout_s} s`));
      if (code === 0) {
        const asked = parseAsk(stdout);
        return resolve(asked ? { decision: 'ask', reason: asked, hook: name } : { decision: 'allow' });
      }
      if (code === 2) return resolve(deny(stderr.trim() || `denied by hook ${name}`));
      const how = signal ? `was killed by ${signal}` : `exited ${code}`;
      resolve(deny(`hook ${name} ${how}${stderr.trim() ? `: ${stderr.trim().split('\n')[0]}` : ''}`));
    });
  });
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
