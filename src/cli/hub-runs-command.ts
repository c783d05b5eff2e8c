/**
 * `keel hub runs list|show|verify`: the hub's workflow runs in the team store, their stages and
 * evidence, and an offline check of a run's sealed event chain with the audit key. Only commander loads
 * with the command tree; the store and the hub load when a verb runs.
 */
import { Command } from 'commander';
import type { RunEvent } from '../hub/runs-chain.js';
import type { RunView } from '../hub/runs-read.js';
import type { Store } from '../store/engine.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { reportError } from './errors.js';
import { parseIntArg } from './options.js';
import { dim, red } from './render.js';

interface Flags {
  json?: boolean;
  cwd?: string;
  limit?: number;
}

interface DecideFlags {
  json?: boolean;
  reject?: boolean;
  reason?: string;
}

/** `runs` with its three verbs, for `keel hub` to add (`hub.addCommand(hubRunsCommand(setExit))`). */
export function hubRunsCommand(setExit: (code: number) => void): Command {
  const runs = new Command('runs').description(
    "the hub's workflow runs: their stages, evidence and sealed events",
  );
  runs
    .command('list')
    .description('workflow runs, newest first')
    .option('-n, --limit <n>', 'how many', parseIntArg, 20)
    .option('--json', 'print one JSON document')
    .action(async (opts: Flags) => setExit(await withStore(opts, (store) => listHubRuns(store, opts))));
  runs
    .command('show')
    .description("a run's stages, their frozen agents and evidence, and its events")
    .argument('<run>', 'run id')
    .option(
      '--json',
      "print one JSON document (with the run's signal_secret when the hub's signal secret is set)",
    )
    .action(async (run: string, opts: Flags) =>
      setExit(await withStore(opts, (store) => showHubRun(store, run, opts))),
    );
  runs
    .command('verify')
    .description("recompute a run's event chain and its seals with the audit key (exit 1 if anything is off)")
    .argument('<run>', 'run id')
    .option('--json', 'print one JSON document')
    .action(async (run: string, opts: Flags) =>
      setExit(await withStore(opts, (store) => verifyHubRun(store, run, opts))),
    );
  runs
    .command('approve')
    .description(
      "decide a run's parked approval stage as a person (KEEL_HUB_URL; the project token in KEEL_HUB_TOKEN, or the admin token)",
    )
    .argument('<run>', 'run id')
    .argument('<stage>', 'the approval stage waiting')
    .option('--reject', 'reject it: the run ends rejected')
    .option('--reason <text>', "why (kept in the run's sealed events)")
    .option('--json', 'print one JSON document')
    .action(async (run: string, stage: string, opts: DecideFlags) =>
      setExit(await decideHubRun(run, stage, opts)),
    );
  return runs;
}

/**
 * Approve or reject through the hub (never the store directly: the hub checks who may, and seals the
 * decision with its own audit key). A person's credential: the project token (KEEL_HUB_TOKEN) when set,
 * else the admin token; an agent key is refused by the hub.
 */
async function decideHubRun(runId: string, stageId: string, flags: DecideFlags): Promise<number> {
  const { adminToken, failed, hubUrl } = await import('./hub-command.js');
  const { hubFetch } = await import('../tools/hub-client.js');
  try {
    const token = process.env.KEEL_HUB_TOKEN?.trim() || adminToken();
    const decision = flags.reject ? 'reject' : 'approve';
    const { json } = await hubFetch(
      hubUrl(),
      token,
      'POST',
      `/v1/runs/${encodeURIComponent(runId)}/stages/${encodeURIComponent(stageId)}/approval`,
      { decision, ...(flags.reason !== undefined ? { reason: flags.reason } : {}) },
    );
    if (flags.json) out(json);
    else
      process.stdout.write(
        `run ${inertLine(String(json.run_id))}: ${inertLine(String(json.stage))} ${decision === 'approve' ? 'approved' : 'rejected'} by ${inertLine(String(json.by))}; the run is ${inertLine(String(json.status))}\n`,
      );
    return EXIT.ok;
  } catch (err) {
    return failed(flags.json, err);
  }
}

async function withStore(flags: Flags, fn: (store: Store | undefined) => Promise<number>): Promise<number> {
  const { openConfiguredStore } = await import('./team-store.js');
  const { ConfigError } = await import('../term/options.js');
  let store: Store | undefined;
  try {
    ({ store } = await openConfiguredStore(flags, { create: false }));
  } catch (err) {
    if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    return reportError(flags.json, 'ENVIRONMENT_ERROR', `cannot open the store at ${(err as Error).message}`);
  }
  if (!store)
    return reportError(flags.json, 'CONFIG_ERROR', 'no team store yet: the hub has run no workflow');
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

function out(doc: unknown): void {
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
}

function at(ms: number | null): string | null {
  return ms === null ? null : new Date(Number(ms)).toISOString();
}

async function listHubRuns(store: Store | undefined, flags: Flags): Promise<number> {
  const { listRuns } = await import('../hub/runs-read.js');
  // no store file yet: no runs
  const runs = store ? await listRuns(store, flags.limit ?? 20) : [];
  if (flags.json) {
    out({
      runs: runs.map((r) => ({
        run_id: r.id,
        workflow: r.workflow,
        status: r.status,
        stage_index: r.stage_index,
        event: r.event,
        delivery_id: r.delivery_id,
        created_at: at(r.created_at),
      })),
    });
    return EXIT.ok;
  }
  if (!runs.length) process.stdout.write(dim('no workflow runs\n'));
  for (const r of runs)
    process.stdout.write(
      `${r.id}  ${inertLine(r.workflow).padEnd(16)} ${r.status.padEnd(9)} ${at(r.created_at)}  ${inertLine(r.event)}\n`,
    );
  return EXIT.ok;
}

function stageDocument(s: RunView['stages'][number]) {
  return {
    id: s.id,
    kind: s.kind,
    state: s.state,
    attempt: s.attempt,
    min_producers: s.min_producers,
    ...(s.producers !== undefined ? { producers: s.producers } : {}),
    eligible: s.eligible,
    signal: s.signal,
    mode: s.mode,
    timeout_ms: s.timeout_ms === null ? null : Number(s.timeout_ms),
    prompt: s.prompt,
    started_at: at(s.started_at),
    ended_at: at(s.ended_at),
  };
}

function eventDocument(e: RunEvent) {
  return { seq: e.seq, at: at(e.ts), type: e.type, data: e.data, hash: e.hash };
}

async function showHubRun(store: Store | undefined, runId: string, flags: Flags): Promise<number> {
  const { readRun } = await import('../hub/runs-read.js');
  const run = store && (await readRun(store, runId));
  if (!run) return reportError(flags.json, 'CONFIG_ERROR', `no workflow run ${runId}`);
  const secret = run.signal_secret_env ? process.env[run.signal_secret_env] : undefined;
  if (flags.json) {
    const { runSignalSecret } = await import('../hub/signals.js');
    out({
      run_id: run.id,
      workflow: run.workflow,
      workflow_sha256: run.workflow_sha256,
      project: run.project,
      status: run.status,
      source: run.source,
      event: run.event,
      delivery_id: run.delivery_id,
      body_sha256: run.body_sha256,
      created_at: at(run.created_at),
      signal_secret: secret ? runSignalSecret(secret, run.id) : null,
      stages: run.stages.map(stageDocument),
      events: run.events.map(eventDocument),
    });
    return EXIT.ok;
  }
  process.stdout.write(`run ${run.id}: workflow ${inertLine(run.workflow)}, ${run.status}\n`);
  process.stdout.write(
    dim(`started ${at(run.created_at)} by ${run.source} delivery ${inertLine(run.delivery_id)}\n`),
  );
  for (const s of run.stages) {
    const who = s.eligible.map((e) => inertLine(e.agent_name)).join(', ');
    const count = s.producers !== undefined ? `, ${s.producers}/${s.min_producers} answered` : '';
    process.stdout.write(
      `  ${inertLine(s.id).padEnd(14)} ${s.kind.padEnd(12)} ${s.state.padEnd(9)} attempt ${s.attempt}${count}${who ? `  (${who})` : ''}\n`,
    );
    if (s.kind === 'approval' && s.state === 'parked')
      process.stdout.write(
        `  ${' '.repeat(14)} waits for approval: keel hub runs approve ${run.id} ${inertLine(s.id)} [--reject] [--reason TEXT]\n`,
      );
  }
  for (const e of run.events)
    process.stdout.write(
      dim(`  #${e.seq} ${at(e.ts)} ${inertLine(e.type)} ${inertLine(JSON.stringify(e.data))}\n`),
    );
  return EXIT.ok;
}

async function verifyHubRun(store: Store | undefined, runId: string, flags: Flags): Promise<number> {
  const { hubAuditKey } = await import('./hub-audit-key.js');
  const { verifyRunChain } = await import('../hub/runs-chain.js');
  const { load } = await import('../term/options.js');
  // withStore read this config already: it stands
  const { key, path } = hubAuditKey(process.env, load(flags).loaded.config.hub_audit_key_file);
  if (key instanceof Error) return reportError(flags.json, 'ENVIRONMENT_ERROR', key.message);
  if (!key)
    return reportError(
      flags.json,
      'ENVIRONMENT_ERROR',
      `no audit key at ${path}: the seals cannot be checked`,
    );
  const report = store && (await verifyRunChain(store, key, runId));
  if (!report) return reportError(flags.json, 'CONFIG_ERROR', `no workflow run ${runId}`);
  if (flags.json) out({ run_id: runId, ...report });
  else if (report.ok) process.stdout.write(`run ${runId}: ${report.events} events, chain and seals intact\n`);
  else {
    process.stdout.write(
      `${red('run')} ${runId}: ${report.problems.length} problem(s) in ${report.events} events\n`,
    );
    for (const p of report.problems)
      process.stdout.write(`  ${p.seq === 0 ? 'head' : `#${p.seq}`}: ${inertLine(p.problem)}\n`);
  }
  return report.ok ? EXIT.ok : EXIT.failed;
}
