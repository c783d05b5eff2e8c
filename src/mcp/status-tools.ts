/**
 * session_status and run_status: keel's recorded sessions and fix/loop runs of this project, read-only
 * from KEEL_HOME/keel.db. A session or run of another project (a repository nested in this one is
 * another) is not found here, whatever its id, and an id prefix is matched against this project's only.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import * as z from 'zod';
import { alive } from '../agent/session.js';
import { RUN_MODES, readRuns, recordedIn, runSteps, summarizeRun } from '../fix/runs.js';
import { SessionLookupError, type SessionRow } from '../store/event-log.js';
import { type McpContext, McpToolError } from './context.js';
import { guarded, jsonResult } from './tool-result.js';

const LISTED = 20;
// session ids are `20260101-120000-a1b2c3`; a prefix of one is enough, nothing else is an id
const id = (what: string) =>
  z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/, `a ${what} id is letters, digits and dashes`)
    .describe(`a ${what} id or a unique prefix of it`);
const readOnly = { readOnlyHint: true, openWorldHint: false } as const;

/** A run's tokens as `--json` reports them: input, output and their total. */
function tokensOf(value: unknown): { input: number; output: number; total: number } | null {
  const t = value as { input?: unknown; output?: unknown } | undefined;
  if (typeof t?.input !== 'number' || typeof t.output !== 'number') return null;
  return { input: t.input, output: t.output, total: t.input + t.output };
}

export function registerStatusTools(server: McpServer, ctx: McpContext): void {
  /** The session or run an id (or a prefix) names in this project, or a tool error saying there is none. */
  const lookup = (given: string, what: string, fits: (row: SessionRow) => boolean): SessionRow => {
    let row: SessionRow | undefined;
    try {
      // other projects' sessions are left out before matching: an ambiguous prefix names none of them
      row = ctx.log.findSession(given, (r) => recordedIn(r.cwd, ctx.root) && fits(r));
    } catch (err) {
      if (err instanceof SessionLookupError) throw new McpToolError(err.message);
      throw err;
    }
    if (!row) throw new McpToolError(`no ${what} matches "${given}" in this project`);
    return row;
  };

  /** A session's state as `keel sessions list` shows it, with what its last run cost. */
  const describe = (row: SessionRow) => {
    const events = ctx.log.events(row.id);
    const start = events.findLast((e) => e.type === 'session_start' || e.type === 'session_resume');
    const end = events.findLast((e) => e.type === 'session_end')?.data;
    const pid = start?.data.pid;
    const running = row.code === null && typeof pid === 'number' && alive(pid);
    return {
      id: row.id,
      parent_id: row.parent_id,
      mode: row.mode,
      state: row.code ?? (running ? 'running' : 'interrupted'),
      code: row.code,
      created_at: row.created_at,
      updated_at: row.updated_at,
      title: row.prompt.split('\n')[0]?.trim().slice(0, 80) ?? '',
      provider: row.provider,
      model: row.model,
      rounds: end?.rounds ?? null,
      tokens: tokensOf(end?.tokens),
      cost_usd: row.cost_usd,
      files_changed: end?.files_changed ?? [],
      events: events.length,
    };
  };

  server.registerTool(
    'session_status',
    {
      description:
        "keel's recent sessions in this project (newest first), or one session's state: code, rounds, tokens, cost, files changed, summary.",
      inputSchema: z.object({ session_id: id('session').optional() }).strict(),
      annotations: readOnly,
    },
    (args) =>
      guarded('session_status', async () => {
        if (args.session_id === undefined) {
          const rows = ctx.log.listTopLevel(LISTED, { cwd: ctx.root });
          return jsonResult({ project: ctx.root, sessions: rows.map((row) => describe(row)) });
        }
        const row = lookup(args.session_id, 'session', () => true);
        return jsonResult({ session: { ...describe(row), summary: row.summary } });
      }),
  );

  server.registerTool(
    'run_status',
    {
      description:
        "keel's recent fix and loop runs in this project (newest first), or one run's verdict, attempts, cost, branch and steps.",
      inputSchema: z.object({ run_id: id('run').optional() }).strict(),
      annotations: readOnly,
    },
    (args) =>
      guarded('run_status', async () => {
        if (args.run_id === undefined) {
          const runs = readRuns(ctx.log, ctx.paths, { limit: LISTED, root: ctx.root });
          return jsonResult({ project: ctx.root, runs });
        }
        const row = lookup(args.run_id, 'run', (r) => (RUN_MODES as readonly string[]).includes(r.mode));
        const run = summarizeRun(ctx.log, ctx.paths, row);
        return jsonResult({ run, steps: runSteps(ctx.log, row.id) });
      }),
  );
}
