/**
 * `POST /v1/runs/RUN/stages/STAGE/approval` `{decision: "approve"|"reject", reason?}`: a person decides a
 * workflow run's parked approval stage. A person is whoever holds the run's project token or the admin
 * token; an agent key never decides (agents hold keys, not the project token: keel keeps the project
 * token out of every sandboxed command's environment). Who decided is the credential (`project token
 * ID`, `admin token`), sealed in the run's event chain; the body cannot name anyone. Another project's
 * run is as unknown as none. Every refusal is a JSON error with a code, and an audit row.
 */
import type { Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { DecisionBody } from './api.js';
import type { HubStore } from './hub-store.js';
import { RunRefused, type RunsStore } from './runs-store.js';
import { bearer, sameSecret } from './tokens.js';

export interface ApprovalRouteOptions {
  runs: RunsStore;
  hub: HubStore;
  adminToken: string;
  /** Told of every refusal (the hub audits it). */
  onRefusal?: (r: {
    run: string;
    status: number;
    code: string;
    projectId?: string;
    agentId?: string;
  }) => void;
  /** Told after a decision committed (the hub wakes the streams of the next stage's agents). */
  onRunMoved?: (runId: string) => void;
}

type Status = 400 | 401 | 403 | 404 | 409 | 413 | 422;

export function mountApprovalRoute(app: Hono, opts: ApprovalRouteOptions): void {
  app.post(
    '/v1/runs/:run/stages/:stage/approval',
    bodyLimit({
      maxSize: 16 * 1024,
      onError: (c) => c.json({ code: 'body_too_large', error: 'a decision is at most 16 KiB' }, 413),
    }),
    async (c: Context) => {
      const runId = c.req.param('run') ?? '';
      const stageId = c.req.param('stage') ?? '';
      const refuse = (
        status: Status,
        code: string,
        error: string,
        who: { projectId?: string; agentId?: string } = {},
      ) => {
        opts.onRefusal?.({ run: runId, status, code, ...who });
        return c.json({ code, error }, status);
      };
      const token = bearer(c.req.header('authorization'));
      let by: string;
      let projectId: string | undefined;
      if (token && sameSecret(token, opts.adminToken)) by = 'admin token';
      else {
        const project = token ? await opts.hub.projectOf(token) : undefined;
        if (!project) {
          const agent = token ? await opts.hub.agentOf(token) : undefined;
          if (agent)
            return refuse(
              403,
              'person_only',
              `agent ${agent.name} cannot decide an approval stage: a person decides it with the project token or the admin token`,
              { projectId: agent.projectId, agentId: agent.agentId },
            );
          return refuse(
            401,
            'unauthorized',
            'this route needs Authorization: Bearer <a live project token, or the admin token>',
          );
        }
        by = `project token ${project.tokenId}`;
        projectId = project.projectId;
      }
      let raw: unknown;
      try {
        const text = await c.req.text();
        raw = text.trim() ? JSON.parse(text) : {};
      } catch {
        return refuse(400, 'bad_request', 'the request body is not JSON');
      }
      const parsed = DecisionBody.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return refuse(
          400,
          'bad_request',
          `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'} (the body is {"decision": "approve"|"reject", "reason"?: text})`,
          projectId ? { projectId } : {},
        );
      }
      try {
        const receipt = await opts.runs.decide({
          runId,
          stageId,
          decision: parsed.data.decision,
          by,
          ...(parsed.data.reason !== undefined ? { reason: parsed.data.reason } : {}),
          ...(projectId ? { projectId } : {}),
        });
        opts.onRunMoved?.(runId);
        return c.json(receipt, 200);
      } catch (err) {
        if (err instanceof RunRefused)
          return refuse(err.status, err.code, err.message, projectId ? { projectId } : {});
        throw err;
      }
    },
  );
}
