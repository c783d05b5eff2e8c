/**
 * What the verbs that run the fix loop (keel fix, build, loop) do alike around their run: refuse before it
 * in the one error shape, say warnings, open the run's ledger, and stop it on Ctrl+C or a kill.
 */

import type { Config } from '../config/schema.js';
import type { CallContext } from '../model/call-ledger.js';
import type { RunLedger } from '../model/open-ledger.js';
import { exitCodeFor } from '../term/exit-codes.js';
import { inert, inertLine } from '../term/inert.js';
import { red } from './render.js';

/**
 * A refusal before the run: with --json one document (`session_id` null, the mode, the code, `error`,
 * `status: "failed"` where the verb's document has a status), else `keel <mode>: message` on stderr.
 * Returns the exit status.
 */
export function verbFailure(
  mode: 'fix' | 'build' | 'loop',
  json: boolean | undefined,
  opts: { status: boolean },
): (code: 'CONFIG_ERROR' | 'ENVIRONMENT_ERROR', message: string) => number {
  return (code, message) => {
    const exit = exitCodeFor(code);
    if (json)
      process.stdout.write(
        `${JSON.stringify({ session_id: null, mode, code, exit_code: exit, error: message, ...(opts.status ? { status: 'failed' } : {}), summary: message })}\n`,
      );
    else process.stderr.write(`${red(`keel ${mode}:`)} ${inert(message)}\n`);
    return exit;
  };
}

/** A warning for the person, on stderr, as one inert line. */
export function warn(message: string): void {
  process.stderr.write(`${red('keel: warning:')} ${inertLine(message)}\n`);
}

/**
 * The run's ledger in the team store, its warnings said on stderr; `{ error }` when the store cannot be
 * reached (the verb then ends with ENVIRONMENT_ERROR before any model call).
 */
export async function openVerbLedger(
  config: Config,
  context: CallContext,
  opts: { costCapUsd?: number } = {},
): Promise<RunLedger | { error: string }> {
  const { LedgerStoreError, openRunLedger } = await import('../model/open-ledger.js');
  try {
    return await openRunLedger(config, context, { ...opts, warn });
  } catch (err) {
    if (err instanceof LedgerStoreError) return { error: err.message };
    throw err;
  }
}

/** Ctrl+C or a kill (SIGTERM) aborts `signal` until `release()`: the run then ends CANCELLED, its log ended. */
export function abortOnInterrupt(): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
