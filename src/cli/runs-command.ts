/** `keel runs list|show|prune` and `keel fix --clean`: look back at fix and loop runs, and clear what they left. */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { keelPaths } from '../config/paths.js';
import { ApplyError, type ApplyPlan, applyFix, applyPlan } from '../fix/apply.js';
import {
  describeItem,
  type PruneItem,
  prunePlan,
  pruneRun,
  RUN_MODES,
  type RunSummary,
  readRuns,
  runOfRepo,
  runReport,
  runSteps,
  summarizeRun,
} from '../fix/runs.js';
import { findRepo } from '../policy/git.js';
import { AuditLog } from '../store/audit.js';
import { appendAudited } from '../store/audit-entries.js';
import { openDb } from '../store/db.js';
import { EventLog } from '../store/event-log.js';
import { EXIT } from '../term/exit-codes.js';
import { inert, inertLine } from '../term/inert.js';
import { confirmOrExit } from './ask-line.js';
import { dim, red } from './render.js';

type Json = { json?: boolean };

/** The one error shape: `{code, exit_code, error}` with --json, one red line without. */
function fail(flags: Json, message: string, exit: number = EXIT.usage, extra: object = {}): number {
  const code =
    exit === EXIT.usage ? 'CONFIG_ERROR' : exit === EXIT.environment ? 'ENVIRONMENT_ERROR' : 'NOT_PRUNED';
  if (flags.json)
    process.stdout.write(`${JSON.stringify({ code, exit_code: exit, error: message, ...extra }, null, 2)}\n`);
  else process.stderr.write(`${red('keel:')} ${inertLine(message)}\n`);
  return exit;
}

function withLog<T>(fn: (log: EventLog, paths: ReturnType<typeof keelPaths>) => T): T | undefined {
  const paths = keelPaths();
  if (!existsSync(paths.db)) return undefined;
  const db = openDb(paths.db);
  try {
    return fn(new EventLog(db), paths);
  } finally {
    db.close();
  }
}

/** The `--json` form of a run. */
function runDocument(r: RunSummary): Record<string, unknown> {
  return {
    run_id: r.id,
    kind: r.kind,
    created_at: r.createdAt,
    cwd: r.cwd,
    title: r.title,
    code: r.code,
    verdict: r.verdict,
    attempts: r.attempts,
    cost_usd: r.costUsd,
    repo: r.repo,
    branch: r.branch,
    worktree: r.worktree,
    run_dir: r.runDir,
    pruned: r.pruned,
  };
}

/** `keel runs list`: newest first, one line each. */
export async function listRuns(flags: Json & { limit: number; all?: boolean }): Promise<number> {
  const runs =
    withLog((log, paths) =>
      readRuns(log, paths, { limit: flags.limit, ...(flags.all ? { all: true } : {}) }),
    ) ?? [];
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ runs: runs.map(runDocument) }, null, 2)}\n`);
    return EXIT.ok;
  }
  if (!runs.length) {
    process.stderr.write('no fix or loop runs yet\n');
    return EXIT.ok;
  }
  for (const r of runs) {
    const cost = r.costUsd === null ? '-' : `$${r.costUsd.toFixed(4)}`;
    const count = countOf(r);
    const kept = [r.branch ? `branch ${r.branch}` : '', r.worktree ? `worktree ${r.worktree}` : '']
      .filter(Boolean)
      .join(', ');
    const title = inertLine(r.title.length > 40 ? `${r.title.slice(0, 37)}...` : r.title);
    process.stdout.write(
      `${r.id}  ${r.kind.padEnd(4)}  ${r.verdict.padEnd(19)}  ${count.padEnd(10)}  ${cost.padStart(9)}  ${age(r.createdAt).padStart(4)}  ${title}${kept ? `  ${dim(inertLine(kept))}` : ''}${r.pruned ? dim('  (pruned)') : ''}\n`,
    );
  }
  return EXIT.ok;
}

/** `keel runs show ID`: the verdict, then the rationale, PR text and diff (a loop: its rounds), and the trace. */
export async function showRun(id: string, flags: Json): Promise<number> {
  const found = withLog((log, paths) => {
    const row = log.findSession(id);
    if (!row || !(RUN_MODES as readonly string[]).includes(row.mode)) return undefined;
    const run = summarizeRun(log, paths, row);
    return { run, report: runReport(run), steps: runSteps(log, row.id), children: log.childSessions(row.id) };
  });
  if (!found) return fail(flags, `no fix or loop run matches "${id}" (see keel runs list)`);
  const { run, report, steps, children } = found;
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify(
        {
          ...runDocument(run),
          rationale: report.rationale,
          pr_description: report.pr,
          diff: report.diff,
          trace: report.trace,
          steps,
          sessions: children.map((c) => ({ session_id: c.id, mode: c.mode, code: c.code })),
        },
        null,
        2,
      )}\n`,
    );
    return EXIT.ok;
  }
  const cost = run.costUsd === null ? '-' : `$${run.costUsd.toFixed(4)}`;
  const out = (s: string) => process.stdout.write(s);
  const verdict = run.verdict === run.code ? run.code : `${run.verdict} (${run.code})`;
  out(`run ${run.id} · ${run.kind} · ${verdict} · ${countOf(run)} · ${cost}\n`);
  out(`${inertLine(run.title)}\n${dim(inertLine(`in ${run.cwd}, ${run.createdAt}`))}\n`);
  if (run.branch) out(`branch:   ${inertLine(run.branch)} (in ${inertLine(run.repo ?? '?')})\n`);
  if (run.worktree) out(`worktree: ${inertLine(run.worktree)}\n`);
  const section = (title: string, text: string | null) => {
    if (text?.trim()) out(`\n── ${title} ──\n${inert(text.trimEnd())}\n`);
  };
  section('rationale', report.rationale);
  section('pr description', report.pr);
  section('diff', report.diff);
  if (!report.rationale && steps.length) section('steps', steps.join('\n'));
  if (children.length)
    out(`\n${dim(`sessions: ${children.map((c) => `${c.id} (${c.mode})`).join(', ')}`)}\n`);
  out(
    report.trace
      ? `\ntrace:    ${inertLine(report.trace)}\n`
      : `\n${dim(`trace: keel sessions show ${run.id} --tree`)}\n`,
  );
  return EXIT.ok;
}

/**
 * `keel runs apply ID`: fast-forward the checked-out branch of the current repository to a verified fix
 * (src/fix/apply.ts, the same rules as the page's button); asks first unless --yes.
 */
export async function applyRun(id: string, flags: Json & { yes?: boolean }): Promise<number> {
  const paths = keelPaths();
  let plan: ApplyPlan;
  try {
    const found = withLog((log) => {
      const row = log.findSession(id);
      if (!row || !(RUN_MODES as readonly string[]).includes(row.mode)) return undefined;
      return applyPlan(summarizeRun(log, paths, row), process.cwd());
    });
    if (!found) return fail(flags, `no fix or loop run matches "${id}" (see keel runs list)`);
    plan = found;
  } catch (err) {
    if (err instanceof ApplyError)
      return fail(flags, err.message, EXIT.failed, { applied: false, code: 'NOT_APPLIED' });
    throw err;
  }
  const what = `fast-forward ${plan.into} (${plan.from.slice(0, 12)}) to run ${plan.run.id}'s verified fix on ${plan.branch} (${plan.to.slice(0, 12)})`;
  if (!flags.json) process.stdout.write(`apply will ${inertLine(what)}\n`);
  if (!flags.yes) {
    if (flags.json || !process.stdin.isTTY)
      return fail(flags, 'nothing applied: pass --yes to apply without a prompt', EXIT.failed, {
        applied: false,
        code: 'NOT_APPLIED',
      });
    if (!(await confirmOrExit('Apply it? [y/N] '))) return fail(flags, 'nothing applied', EXIT.failed);
  }
  try {
    const done = withLog((log) => {
      const audit = new AuditLog(paths.auditDir);
      try {
        return applyFix(plan, (runId, type, data) => appendAudited(log, audit, runId, type, data));
      } finally {
        audit.close();
      }
    });
    if (flags.json)
      process.stdout.write(`${JSON.stringify({ applied: true, run_id: plan.run.id, ...done }, null, 2)}\n`);
    else process.stdout.write(`applied: ${inertLine(plan.into)} is now at ${plan.to.slice(0, 12)}\n`);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof ApplyError)
      return fail(flags, err.message, EXIT.failed, { applied: false, code: 'NOT_APPLIED' });
    throw err;
  }
}

/** `keel runs prune`: every run (`--all`) or those older than `--older-than DAYS`. */
export async function pruneRuns(
  flags: Json & { olderThan?: number; all?: boolean; yes?: boolean },
): Promise<number> {
  if (!flags.all && flags.olderThan === undefined)
    return fail(flags, 'say which runs to prune: --older-than DAYS, or --all');
  const cutoff = flags.olderThan === undefined ? Infinity : Date.now() - flags.olderThan * 86_400_000;
  return prune(flags, (r) => Date.parse(r.createdAt) < cutoff, 'no run has anything left to prune');
}

/** `keel fix --clean`: prune every run of this repository. */
export async function cleanRepo(flags: Json & { repo?: string; yes?: boolean }): Promise<number> {
  const given = resolve(flags.repo ?? process.cwd());
  if (!statSync(given, { throwIfNoEntry: false })?.isDirectory())
    return fail(flags, `--repo ${given} is not a folder`);
  const dir = realpathSync(given);
  const repo = findRepo(dir) ?? dir;
  return prune(flags, (r) => runOfRepo(r, repo), `no fix run of ${repo} has anything left to clean`);
}

async function prune(
  flags: Json & { yes?: boolean },
  select: (run: RunSummary) => boolean,
  nothing: string,
): Promise<number> {
  const paths = keelPaths();
  const picked =
    withLog((log) =>
      readRuns(log, paths, { limit: 100_000 })
        .filter((r) => r.kind === 'fix' && select(r))
        .map((run) => ({ run, items: prunePlan(run) }))
        .filter((p) => p.items.length),
    ) ?? [];
  if (!picked.length) {
    if (flags.json) process.stdout.write(`${JSON.stringify({ applied: true, runs: [] }, null, 2)}\n`);
    else process.stderr.write(`${nothing}\n`);
    return EXIT.ok;
  }
  const plan = picked.map((p) => ({ run_id: p.run.id, remove: p.items.map(describeItem) }));
  if (!flags.json) {
    process.stdout.write('prune will remove:\n');
    for (const p of picked)
      for (const item of p.items) process.stdout.write(`  ${inertLine(describeItem(item))}\n`);
  }
  if (!flags.yes) {
    if (flags.json || !process.stdin.isTTY)
      return fail(flags, 'nothing removed: pass --yes to remove these without a prompt', EXIT.failed, {
        applied: false,
        runs: plan,
      });
    if (!(await confirmOrExit('Remove them? [y/N] '))) return fail(flags, 'nothing removed', EXIT.failed);
  }
  const done = withLog((log) => {
    const audit = new AuditLog(paths.auditDir);
    const record = (runId: string, type: string, data: Record<string, unknown>) =>
      appendAudited(log, audit, runId, type, data);
    try {
      return picked.map(({ run }) => ({ run, ...pruneRun(log, paths, run, record) }));
    } finally {
      audit.close();
    }
  });
  const results = done ?? [];
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify(
        {
          applied: true,
          runs: results.map((r) => ({
            run_id: r.run.id,
            removed: r.removed.map(describeItem),
            skipped: r.skipped.map((s) => ({ item: describeItem(s), reason: s.reason })),
          })),
        },
        null,
        2,
      )}\n`,
    );
    return EXIT.ok;
  }
  const removed = results.flatMap((r) => r.removed);
  const skipped = results.flatMap((r) => r.skipped);
  process.stdout.write(
    `removed:\n${removed.map((i: PruneItem) => `  ${inertLine(describeItem(i))}\n`).join('')}`,
  );
  for (const s of skipped)
    process.stderr.write(`${red('kept:')} ${inertLine(`${describeItem(s)}: ${s.reason}`)}\n`);
  return EXIT.ok;
}

/** `1 attempt`, `3 rounds`. */
function countOf(r: RunSummary): string {
  return `${r.attempts} ${r.kind === 'fix' ? 'attempt' : 'round'}${r.attempts === 1 ? '' : 's'}`;
}

/** `3m`, `5h`, `2d`: how long ago. */
export function age(iso: string): string {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.round(s / 60)}m`;
  if (s < 86_400) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}
