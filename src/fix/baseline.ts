/**
 * A fix run's baseline: the repository's tests run in the snapshot before any change (with the
 * importable form of a Python suite when the plain one cannot import the project, and throw-away copies
 * of packages a tool writes into), which every attempt is then judged against.
 */
import type { Sandbox } from '../policy/sandbox.js';
import { readOnlyWrite } from '../verify/environment.js';
import { importableForm, type TestSuite } from '../verify/suite.js';
import type { SuiteRun } from '../verify/types.js';
import { collectionError } from '../verify/verifier.js';
import type { FixOptions } from './run.js';
import { refreshDependencies, type Snapshot, writablePackage } from './snapshot.js';

/**
 * Run the baseline. `runTests` runs the suite the baseline settled on, from the user's dependencies as
 * they are; `chose` hears the command a user can rerun when the baseline switches to another form.
 * The caller checks the signal after it: an interrupted baseline is no baseline.
 */
export async function runBaseline({
  opts,
  found,
  snapshot,
  sandbox,
  reportsDir,
  progress,
  waiting,
  chose,
}: {
  opts: FixOptions;
  found: TestSuite;
  snapshot: Snapshot;
  sandbox: Sandbox;
  reportsDir: string;
  progress: (line: string) => void;
  waiting: (label: string) => () => string;
  chose: (command: string) => void;
}): Promise<{ suite: TestSuite; before: SuiteRun; runTests: () => Promise<SuiteRun>; took: string }> {
  let suite = found;
  const runTests = () => suiteRunner(opts.signal, suite, snapshot, sandbox)();
  progress(
    `baseline: running \`${suite.detected.command}\` (${suite.detected.source}) ${sandbox.kind === 'none' ? 'without a sandbox' : `in ${sandbox.kind}`}`,
  );
  if (suite.detected.steps !== undefined) {
    const steps = suite.detected.steps.map(
      (step) => `${step.name} (${step.runner === 'unknown' ? 'check' : step.runner}: \`${step.command}\`)`,
    );
    progress(`baseline: \`${suite.detected.command}\` runs ${steps.join(', ')}`);
  }
  const baselineDone = waiting(`baseline: running \`${suite.detected.command}\``);
  let before: SuiteRun;
  try {
    before = await runTests();
  } catch (err) {
    baselineDone();
    throw err;
  }
  const importable = opts.signal.aborted ? undefined : importableForm(suite, before, reportsDir);
  if (importable !== undefined) {
    progress(
      `baseline: \`${suite.detected.command}\` cannot import the project (${firstLine(collectionError(before) ?? '')}); trying \`${importable.detected.command}\`, which puts the project's folder on sys.path`,
    );
    const previous = suite;
    suite = importable;
    const again = await runTests();
    if (collectionError(again) === undefined && again.environmentProblem === undefined) {
      before = again;
      chose(suite.detected.command);
    } else suite = previous;
  }
  // a tool that writes into its own package (vitest --typecheck's .tsbuildinfo) gets a throw-away copy
  for (
    let copies = 0;
    copies < 3 && before.environmentProblem !== undefined && !opts.signal.aborted;
    copies++
  ) {
    const path = readOnlyWrite([before.output, ...before.results.map((r) => r.message ?? '')].join('\n'));
    const name = path === undefined ? undefined : writablePackage(snapshot, path);
    if (name === undefined) break;
    progress(
      `baseline: a tool writes into ${name} (${path}); the tests get a throw-away copy of it, your node_modules is not changed`,
    );
    before = await runTests();
  }
  const baselineTook = baselineDone();
  return { suite, before, runTests, took: baselineTook };
}

/** Run `suite` in the sandbox, each run from the user's dependencies as they are (whatever an attempt left in node_modules). */
export function suiteRunner(
  signal: AbortSignal,
  suite: TestSuite,
  snapshot: Snapshot,
  sandbox: Sandbox,
): () => Promise<SuiteRun> {
  const exec = (command: string, o: { timeoutS: number; signal: AbortSignal }) => sandbox.run(command, o);
  return () => {
    refreshDependencies(snapshot);
    return suite.run({ signal, exec });
  };
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}
