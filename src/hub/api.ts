/**
 * The hub's HTTP contract: every route, who may call it (no one, the admin, a project token, an agent
 * key), its body's zod schema, and the OpenAPI document generated from the same table.
 */
import * as z from 'zod';
import { type ApiRoute, buildOpenApiDocument } from '../http/openapi.js';
import { LIMITS } from './hub-store.js';
import { MAX_BODY, REFUSAL_STATUS } from './webhook-routes.js';

/** A request body, whole: the message body's own limit (LIMITS.maxBodyBytes) is checked apart, in bytes. */
export const MAX_REQUEST_BYTES = 2 * 1024 * 1024;

const name = z
  .string()
  .min(1)
  .max(LIMITS.maxNameChars)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
    'letters, digits, ".", "_" and "-", starting with a letter or digit',
  );
const key = z.string().min(1).max(LIMITS.maxKeyChars);

export const RegisterBody = z.object({ name, role: z.string().min(1).max(64).optional() }).strict();
export const SendBody = z
  .object({
    to: name,
    body: z.string(),
    idempotency_key: key,
    ttl_s: z.number().optional(),
    reply_to: z.string().min(1).max(100).optional(),
    hop: z.number().int().min(0).optional(),
  })
  .strict();
export const ReplyBody = z.object({ body: z.string(), idempotency_key: key.optional() }).strict();
/** The most ids one `POST /v1/acks` takes (one SSE write carries at most 500 messages). */
export const MAX_ACKS = 500;
export const AcksBody = z.object({ ids: z.array(z.string().min(1).max(100)).min(1).max(MAX_ACKS) }).strict();

/** A person's decision on a parked approval stage: nothing else, so no field can claim who decided. */
export const DecisionBody = z
  .object({
    decision: z.enum(['approve', 'reject']),
    reason: z.string().max(2000).optional(),
  })
  .strict();

/** `person`: the project token or the admin token, never an agent key (the route checks: approval-route.ts). */
export type Access = 'public' | 'admin' | 'project' | 'agent' | 'person';

interface Route extends ApiRoute {
  access: Access;
}

/** The refusals every signed route shares: the signature checks and the body's size. */
const SIGNED_ERRORS = { ...REFUSAL_STATUS, body_too_large: 413 };

export const ROUTES: Route[] = [
  { method: 'get', path: '/health', access: 'public', summary: 'the process is up' },
  { method: 'get', path: '/ready', access: 'public', summary: 'the store answers' },
  { method: 'get', path: '/v1/openapi.json', access: 'public', summary: 'this document' },
  { method: 'get', path: '/metrics', access: 'admin', summary: 'Prometheus text' },
  {
    method: 'post',
    path: '/v1/projects/:name/tokens',
    access: 'admin',
    summary: 'a new project token (the project is created on first use); the token is shown once',
  },
  {
    method: 'get',
    path: '/v1/tokens',
    access: 'admin',
    summary: 'every token and agent key, never a secret',
  },
  {
    method: 'post',
    path: '/v1/tokens/:id/revoke',
    access: 'admin',
    summary: 'revoke a token; a project token takes the agent keys registered with it along',
  },
  { method: 'get', path: '/v1/audit', access: 'admin', summary: "the hub's newest refusals" },
  {
    method: 'post',
    path: '/v1/agents',
    access: 'project',
    summary: 'register an agent under the project token: {agent_id, agent_key}',
    body: RegisterBody,
  },
  { method: 'get', path: '/v1/agents', access: 'agent', summary: "the project's agents and their presence" },
  {
    method: 'post',
    path: '/v1/messages',
    access: 'agent',
    summary: 'send a message (the same key and request: the original back; another request: 409)',
    body: SendBody,
  },
  {
    method: 'get',
    path: '/v1/messages/:id',
    access: 'agent',
    summary: 'a message you sent or received, with its reply',
    query: { wait: 'seconds (at most 60) to wait for the reply' },
  },
  { method: 'post', path: '/v1/messages/:id/ack', access: 'agent', summary: 'you have it: no redelivery' },
  {
    method: 'post',
    path: '/v1/acks',
    access: 'agent',
    summary:
      'ack several messages addressed to you in one request: {acked: ids now acked (or acked or replied before), skipped: the others}',
    body: AcksBody,
  },
  {
    method: 'post',
    path: '/v1/messages/:id/reply',
    access: 'agent',
    summary: 'reply to a message addressed to you (one reply per message)',
    body: ReplyBody,
  },
  {
    method: 'post',
    path: '/v1/messages/:id/cancel',
    access: 'agent',
    summary: 'withdraw a message you sent',
  },
  {
    method: 'get',
    path: '/v1/inbox',
    access: 'agent',
    summary: 'your open messages (not replied, cancelled or expired)',
  },
  {
    method: 'get',
    path: '/v1/events',
    access: 'agent',
    summary:
      'your inbox as a stream (SSE, id: your sequence): every message not acked, then new ones; a delivered message not acked within 30 s comes again',
    stream: true,
  },
  {
    method: 'post',
    path: '/v1/runs/:run/stages/:stage/approval',
    access: 'person',
    summary:
      "a person decides a run's parked approval stage: the run's project token or the admin token, never an agent key (403 person_only); served with --workflow-project",
    body: DecisionBody,
  },
  {
    method: 'post',
    path: '/v1/webhooks/:name',
    access: 'public',
    summary:
      "start a run of the project's trusted workflow NAME from a signed delivery (no hub token: the signature is the credential); served with --workflow-project",
    headers: {
      'X-Hub-Signature-256':
        'source github: sha256=<hex HMAC-SHA256 of the raw body with the secret_env secret>',
      'X-GitHub-Delivery':
        'source github: the delivery id (a repeated id with the same body gets the first receipt)',
      'X-GitHub-Event': 'source github: the event the trigger matches',
      'X-Hub-Signature': 'source jira: sha256=<hex HMAC-SHA256 of the raw body>',
      'X-Atlassian-Webhook-Identifier': 'source jira: the delivery id',
      'webhook-id': 'source generic (Standard Webhooks): the delivery id',
      'webhook-timestamp': 'source generic: seconds since 1970, within 5 minutes of the hub clock',
      'webhook-signature':
        'source generic: v1,<base64 HMAC-SHA256 of "id.timestamp.body" with the whsec_ key>, space-separated',
    },
    rawBody: `the raw bytes as signed (at most ${MAX_BODY}), verified before they are parsed; a JSON object; only its sha256 is kept`,
    answers: {
      '202':
        'the run started: {run_id, workflow, delivery_id, body_sha256, created_at, stage, repeated: false, signal_secret?} (signal_secret, whsec_<base64>, is shown this once)',
      '200':
        'the delivery was seen before: its first receipt with repeated: true (no signal_secret); or {ignored: true, reason} for an event the trigger does not match',
    },
    errors: {
      ...SIGNED_ERRORS,
      bad_payload: 400,
      no_such_workflow: 404,
      untrusted_workflow: 403,
      invalid_workflow: 422,
      no_such_project: 422,
      quorum_unsatisfiable: 422,
      delivery_id_conflict: 409,
      secret_missing: 503,
    },
  },
  {
    method: 'post',
    path: '/v1/runs/:run/signals/:name',
    access: 'public',
    summary:
      "signal a run parked on signal NAME, signed with the run's signal key (no hub token); served with --workflow-project",
    headers: {
      'webhook-id': 'the signal id (a repeated id with the same body gets the first receipt)',
      'webhook-timestamp': 'seconds since 1970, within 5 minutes of the hub clock',
      'webhook-signature':
        'v1,<base64 HMAC-SHA256 of "id.timestamp.body" with the run\'s signal_secret>, space-separated',
    },
    rawBody: `the signal's raw bytes as signed (at most ${MAX_BODY}), verified before they are parsed; only its sha256 is kept`,
    answers: {
      '202': 'the signal is recorded: {run_id, signal, signal_id, body_sha256, consumed, repeated: false}',
      '200': 'the signal id was seen before: its first receipt with repeated: true',
    },
    errors: {
      ...SIGNED_ERRORS,
      no_such_run: 404,
      no_signals: 404,
      no_such_signal: 404,
      signal_id_conflict: 409,
      run_not_running: 409,
    },
  },
];

/** Each route's path as a pattern, made once (every request asks accessOf). */
const MATCHERS = ROUTES.map((r) => ({
  method: r.method,
  access: r.access,
  re: new RegExp(`^${r.path.replace(/:[a-z]+/g, '[^/]+')}$`),
}));

/** Who may call `method path` (undefined: no such route). */
export function accessOf(method: string, path: string): Access | undefined {
  const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  for (const r of MATCHERS) if (r.method === m && r.re.test(path)) return r.access;
  return undefined;
}

export function openApiDocument(version: string): Record<string, unknown> {
  const info = {
    title: 'keel hub',
    version,
    description: `Message bodies up to ${LIMITS.maxBodyBytes} bytes; ttl_s ${LIMITS.minTtlS} to ${LIMITS.maxTtlS}; hop limit ${LIMITS.maxHop}.`,
  };
  return buildOpenApiDocument(info, ROUTES, (r) => ({
    success: r.method === 'post' ? '2XX' : '200',
    bearer: r.access !== 'public',
    extensions: { 'x-keel-access': r.access },
  }));
}
