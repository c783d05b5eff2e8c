/**
 * A fix run's verdict, kept in its project's memory: the next session on this repository learns which
 * fixes keel verified and which failed, and why. keel records it itself (author "keel": neither the
 * model's claim nor the user's word; the reason and the file names, which can repeat what the model or
 * the repository chose, are quoted), and only runs that reached a verdict on an attempt count; a run
 * refused before its first attempt (no tests, dirty tree) says nothing about the code.
 */
import type { Config } from '../config/schema.js';
import { quoted } from '../memory/observe.js';
import { openMemory } from '../memory/open.js';
import type { FixResult } from './run.js';

const MAX_TASK = 100;
const MAX_REASON = 300;
const MAX_FILES = 20;

/** The memory item a finished fix run leaves, or null when it reached no attempt. */
export function fixObservation(
  issue: string,
  result: Pick<FixResult, 'status' | 'reason' | 'attempts' | 'files'>,
): { kind: 'fix_verdict'; text: string; tags: string[] } | null {
  if (result.attempts < 1) return null;
  const first = issue.trim().split('\n')[0] ?? '';
  const task = first.length > MAX_TASK ? `${first.slice(0, MAX_TASK - 1)}…` : first;
  const reason =
    result.reason.length > MAX_REASON ? `${result.reason.slice(0, MAX_REASON - 1)}…` : result.reason;
  const files = result.files.length
    ? `; files: ${result.files
        .slice(0, MAX_FILES)
        .map((f) => quoted(f))
        .join(', ')}${result.files.length > MAX_FILES ? ', …' : ''}`
    : '';
  const verdict = result.status === 'verified' ? 'verified' : 'not verified';
  const attempts = `${result.attempts} attempt${result.attempts === 1 ? '' : 's'}`;
  return {
    kind: 'fix_verdict',
    text: `Fix ${verdict} after ${attempts}: ${quoted(reason)} (task: ${task})${files}`,
    tags: ['fix', result.status],
  };
}

/** Record the verdict in memory. Never throws: memory must not turn a finished run into a failed one. */
export async function observeFix(opts: {
  repo: string;
  issue: string;
  result: FixResult;
  config: Config;
  env: NodeJS.ProcessEnv;
}): Promise<void> {
  const item = fixObservation(opts.issue, opts.result);
  if (!item) return;
  let m: ReturnType<typeof openMemory> | undefined;
  try {
    m = openMemory({ dir: opts.repo, config: opts.config, env: opts.env, pinned: true });
    await m.memory.add({ ...item, author: 'keel', sessionId: opts.result.runId });
  } catch {
    // the verdict is in the run's log and report either way
  } finally {
    m?.close();
  }
}
