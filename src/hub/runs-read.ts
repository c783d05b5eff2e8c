/** Reading workflow runs back: the list, and one run with its stages, frozen agents, producers so far and events. */
import type { Sql } from '../store/engine.js';
import { type RunEvent, runEvents } from './runs-chain.js';
import { producerCount, type RunRow, type StageRow } from './runs-stages.js';
import { shownStatus } from './runs-store.js';

/** A run's status as people read it: a failed run a person rejected is `rejected`. */
export type ShownStatus = RunRow['status'] | 'rejected';

const shown = (row: RunRow): ShownStatus => shownStatus(row);

export interface RunView extends Omit<RunRow, 'status'> {
  status: ShownStatus;
  /** The hub project the run belongs to (null: a run of no project). */
  project: string | null;
  stages: (Omit<StageRow, 'state'> & {
    /** `rejected`: the approval stage a person rejected (stored `done`, the run's last). */
    state: StageRow['state'] | 'rejected';
    eligible: { agent_id: string; agent_name: string }[];
    producers?: number;
  })[];
}

/** Runs, newest first. */
export async function listRuns(
  sql: Sql,
  limit = 50,
): Promise<Array<Omit<RunRow, 'status'> & { status: ShownStatus }>> {
  const rows = await sql.query<RunRow>('SELECT * FROM hub_runs ORDER BY created_at DESC, id LIMIT $1', [
    limit,
  ]);
  return rows.map((r) => ({
    ...r,
    status: shown(r),
    stage_index: Number(r.stage_index),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  }));
}

/** One run with its stages, each stage's frozen agents and, for an asking stage, its producers so far. */
export async function readRun(
  sql: Sql,
  runId: string,
): Promise<(RunView & { events: RunEvent[] }) | undefined> {
  const [run] = await sql.query<RunRow & { project: string | null }>(
    'SELECT r.*, p.name AS project FROM hub_runs r LEFT JOIN hub_projects p ON p.id = r.project_id WHERE r.id = $1',
    [runId],
  );
  if (!run) return undefined;
  const stages = await sql.query<StageRow>(
    'SELECT * FROM hub_run_stages WHERE run_id = $1 ORDER BY position',
    [runId],
  );
  const eligible = await sql.query<{ stage_id: string; agent_id: string; agent_name: string }>(
    'SELECT stage_id, agent_id, agent_name FROM hub_stage_eligible WHERE run_id = $1 ORDER BY agent_name',
    [runId],
  );
  const status = shown(run);
  const view: RunView = {
    ...run,
    status,
    stage_index: Number(run.stage_index),
    created_at: Number(run.created_at),
    updated_at: Number(run.updated_at),
    stages: [],
  };
  for (const s of stages) {
    const stage = { ...s, position: Number(s.position), attempt: Number(s.attempt) };
    const rejected = status === 'rejected' && stage.position === view.stage_index;
    view.stages.push({
      ...stage,
      state: rejected ? 'rejected' : stage.state,
      eligible: eligible
        .filter((e) => e.stage_id === s.id)
        .map(({ agent_id, agent_name }) => ({ agent_id, agent_name })),
      ...(s.state === 'active' ? { producers: await producerCount(sql, stage) } : {}),
    });
  }
  return { ...view, events: await runEvents(sql, runId) };
}
