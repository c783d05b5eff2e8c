/**
 * A fix started by a `keel batch` worker stops when its worker is gone. The worker hands the fix a pipe
 * as stdin and never writes to it: the kernel closes it when the worker exits however it dies (SIGKILL
 * included), so its end of file means no one holds the task's lease for this fix any more, and another
 * attempt may start. The fix then dies as if it had been killed with its worker (SIGKILL, its sandboxed
 * tests with it: bwrap's --die-with-parent): no rollback and no end is written, so its log is exactly a
 * killed run's, which the next attempt resumes one tool effect at a time (fix/resume.ts). A graceful stop
 * would roll the worktree back and end the run CANCELLED, leaving nothing to go on from.
 */

/** Set by the worker, which holds the fix's stdin: `[run id, task id, attempt]` as JSON. */
export const BATCH_ATTEMPT_ENV = 'KEEL_BATCH_ATTEMPT';

/**
 * When `env` names a batch attempt, kill this process once stdin ends (the worker is gone). Reading
 * stdin does not keep the process alive.
 */
export function dieWithWorker(
  env: NodeJS.ProcessEnv = process.env,
  input: NodeJS.ReadStream = process.stdin,
  kill: () => void = () => process.kill(process.pid, 'SIGKILL'),
): void {
  if (!env[BATCH_ATTEMPT_ENV]) return;
  let gone = false;
  const onGone = () => {
    if (gone) return;
    gone = true;
    kill();
  };
  input.on('data', () => {}); // the worker writes nothing; whatever comes is ignored
  input.once('end', onGone);
  input.once('close', onGone);
  input.once('error', onGone);
  input.resume();
  (input as { unref?: () => void }).unref?.();
}
