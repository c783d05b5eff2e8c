/**
 * A fix started by a `keel batch` worker stops when its worker is gone. The worker hands the fix a pipe
 * as stdin and never writes to it: the kernel closes it when the worker exits however it dies (SIGKILL
 * included), so its end of file means no one holds the task's lease for this fix any more, and another
 * attempt may start. The fix then stops as a SIGTERM stops it; one that has not ended a few seconds later
 * exits outright (its sandboxed tests die with it), so two fixes never run on one task.
 */

/** Set by the worker, which holds the fix's stdin: `[run id, task id, attempt]` as JSON. */
export const BATCH_ATTEMPT_ENV = 'KEEL_BATCH_ATTEMPT';

/** How long a fix whose worker is gone has to end its log before it exits without. */
const GRACE_MS = 3_000;

/**
 * When `env` names a batch attempt, call `stop` once stdin ends (the worker is gone), and exit the
 * process if it still runs GRACE_MS later. Reading stdin does not keep the process alive.
 */
export function stopWithWorker(
  stop: () => void,
  env: NodeJS.ProcessEnv = process.env,
  input: NodeJS.ReadStream = process.stdin,
): void {
  if (!env[BATCH_ATTEMPT_ENV]) return;
  let gone = false;
  const onGone = () => {
    if (gone) return;
    gone = true;
    stop();
    setTimeout(() => process.exit(130), GRACE_MS).unref();
  };
  input.on('data', () => {}); // the worker writes nothing; whatever comes is ignored
  input.once('end', onGone);
  input.once('close', onGone);
  input.once('error', onGone);
  input.resume();
  (input as { unref?: () => void }).unref?.();
}
