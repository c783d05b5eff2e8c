/**
 * `keel eval run`: keel fix over each case N times in fresh copies (pass@1, pass@N), and a self-check that
 * keel's own verifier still tells an honest patch from a cheating one, the same way every time.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { type FixOptions, type FixResult, runFix } from '../fix/run.js';
import type { EvalCase } from './cases.js';
import { passAtK } from './pass-at-k.js';

/** How many times the self-check judges each patch: its verdicts must repeat exactly. */
export const SELF_CHECK_REPEATS = 2;

export interface RunVerdict {
  status: 'verified' | 'failed' | 'blocked_uncertain';
  code: string;
  reason: string;
}

export interface CaseReport {
  name: string;
  runs: number;
  successes: number;
  pass_at_1: number;
  pass_at_n: number;
  verdicts: RunVerdict[];
  self_check: { ok: boolean; honest: RunVerdict[]; cheat: RunVerdict[]; problems: string[] };
}

export interface EvalReport {
  keel_eval: 1;
  keel_version: string;
  model: string;
  runs: number;
  cases: CaseReport[];
  overall: { pass_at_1: number; pass_at_n: number };
  self_check: { ok: boolean; problems: string[] };
}

export interface EvalOptions {
  cases: EvalCase[];
  runs: number;
  maxAttempts: number;
  version: string;
  /** The config for a copy (model flags applied), loaded where the copy is. */
  load(repo: string): LoadedConfig;
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  progress(message: string): void;
}

export async function runEval(opts: EvalOptions): Promise<EvalReport> {
  const reports: CaseReport[] = [];
  let model = '';
  for (const [i, c] of opts.cases.entries()) {
    const at = `case ${i + 1}/${opts.cases.length} ${c.name}`;
    const honest: RunVerdict[] = [];
    const cheat: RunVerdict[] = [];
    for (let r = 1; r <= SELF_CHECK_REPEATS; r++) {
      opts.progress(`${at}: self-check ${r}/${SELF_CHECK_REPEATS}: the honest patch`);
      honest.push(await once(opts, c, { patch: c.honestPatch, maxAttempts: 1 }));
      opts.progress(`${at}: self-check ${r}/${SELF_CHECK_REPEATS}: the cheating patch`);
      cheat.push(await once(opts, c, { patch: c.cheatPatch, maxAttempts: 1 }));
    }
    const problems = selfCheckProblems(honest, cheat);
    if (problems.length) opts.progress(`${at}: SELF-CHECK FAILED: ${problems.join('; ')}`);
    const verdicts: RunVerdict[] = [];
    for (let r = 1; r <= opts.runs; r++) {
      if (opts.signal.aborted) break;
      opts.progress(`${at}: run ${r}/${opts.runs}: keel fix`);
      const v = await once(opts, c, { maxAttempts: opts.maxAttempts }, (loaded) => {
        model = modelOf(loaded);
      });
      opts.progress(
        `${at}: run ${r}/${opts.runs}: ${v.status === 'verified' ? 'verified' : `not verified (${v.code})`}`,
      );
      verdicts.push(v);
    }
    const successes = verdicts.filter((v) => v.status === 'verified').length;
    reports.push({
      name: c.name,
      runs: verdicts.length,
      successes,
      pass_at_1: verdicts.length ? passAtK(verdicts.length, successes, 1) : 0,
      pass_at_n: verdicts.length ? passAtK(verdicts.length, successes, verdicts.length) : 0,
      verdicts,
      self_check: { ok: problems.length === 0, honest, cheat, problems },
    });
  }
  const mean = (pick: (r: CaseReport) => number) =>
    reports.length ? reports.reduce((s, r) => s + pick(r), 0) / reports.length : 0;
  const problems = reports.flatMap((r) => r.self_check.problems.map((p) => `${r.name}: ${p}`));
  return {
    keel_eval: 1,
    keel_version: opts.version,
    model: model || modelOf(opts.load(opts.cases[0]?.repo ?? process.cwd())),
    runs: opts.runs,
    cases: reports,
    overall: { pass_at_1: mean((r) => r.pass_at_1), pass_at_n: mean((r) => r.pass_at_n) },
    self_check: { ok: problems.length === 0, problems },
  };
}

/** The model a report names: the configured name, else the provider's (a scripted run has no model name). */
function modelOf(loaded: LoadedConfig): string {
  return loaded.config.model || loaded.config.provider || 'the default model';
}

/** What makes the eval untrustworthy: an honest patch refused, a cheat accepted, a verdict that changed. */
export function selfCheckProblems(honest: RunVerdict[], cheat: RunVerdict[]): string[] {
  const problems: string[] = [];
  const bad = honest.find((v) => v.status !== 'verified');
  if (bad) problems.push(`the honest patch was not verified (${bad.code}: ${bad.reason})`);
  if (cheat.some((v) => v.status === 'verified')) problems.push('the cheating patch was verified');
  // refused by the verifier, not by a patch that does not apply or a machine that cannot run the tests
  else {
    const odd = cheat.find((v) => v.code !== 'VERIFICATION_FAILED');
    if (odd) problems.push(`the cheating patch was not judged by the verifier (${odd.code}: ${odd.reason})`);
  }
  const same = (vs: RunVerdict[]) => vs.every((v) => JSON.stringify(v) === JSON.stringify(vs[0]));
  if (!same(honest)) problems.push("the honest patch's verdicts differ between runs");
  if (!same(cheat)) problems.push("the cheating patch's verdicts differ between runs");
  return problems;
}

/** One keel fix in a fresh copy of the case's repository; the copy and the fix's worktree are removed after. */
async function once(
  opts: EvalOptions,
  c: EvalCase,
  how: Pick<FixOptions, 'maxAttempts'> & { patch?: string },
  onLoaded?: (loaded: LoadedConfig) => void,
): Promise<RunVerdict> {
  const repo = freshCopy(c);
  let result: FixResult | undefined;
  try {
    const loaded = opts.load(repo);
    onLoaded?.(loaded);
    result = await runFix({
      repo,
      issue: c.issue,
      targetTests: c.targetTests,
      ...(c.testCommand ? { testCommand: c.testCommand } : {}),
      ...how,
      loaded,
      env: opts.env,
      signal: opts.signal,
    });
    return { status: result.status, code: result.code, reason: verdictReason(result) };
  } finally {
    if (result?.snapshot?.kind === 'worktree' && result.worktree)
      rmSync(result.worktree, { recursive: true, force: true });
    rmSync(join(repo, '..'), { recursive: true, force: true });
  }
}

/** The verifier's reason (no run ids or paths), so verdicts of two runs compare exactly. */
function verdictReason(r: FixResult): string {
  const v = r.verification;
  if (!v) return r.reason;
  const edits = v.testEdits?.length ? `; test edits set aside: ${v.testEdits.join(', ')}` : '';
  return `${v.reason}${edits}`;
}

/** The case's files in a new git repository with one commit, in a temporary folder. */
function freshCopy(c: EvalCase): string {
  const top = realpathSync(mkdtempSync(join(tmpdir(), `keel-eval-${c.name.slice(0, 40)}-`)));
  const repo = join(top, 'repo');
  cpSync(c.repo, repo, { recursive: true });
  const git = (...args: string[]) =>
    execFileSync(
      'git',
      [
        '-c',
        'user.name=keel eval',
        '-c',
        'user.email=eval@keel.invalid',
        '-c',
        'commit.gpgsign=false',
        ...args,
      ],
      { cwd: repo, stdio: 'ignore' },
    );
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', `keel eval: case ${c.name}`);
  return repo;
}
