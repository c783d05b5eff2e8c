/**
 * Webhook signatures, checked on the raw body before anything parses it. GitHub and Jira sign the body
 * alone (HMAC-SHA256, hex, `sha256=`): they carry no timestamp, so a captured delivery stays valid and
 * only the delivery-id table (runs-store.ts) stops a replay. Standard Webhooks (everything else, and the
 * hub's own signals) sign `id.timestamp.body` and are refused outside a five-minute window either way.
 * Every comparison of a signature is constant-time.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** How far a Standard Webhooks timestamp may be from the hub's clock, either way. */
export const TOLERANCE_S = 5 * 60;

/** The longest delivery id kept. */
const MAX_ID = 200;
/** At most this many signatures in one `webhook-signature` header (key rotation needs two or three). */
const MAX_SIGNATURES = 8;

export type WebhookSource = 'github' | 'jira' | 'generic';

/** A header by its name (any case). */
export type Headers = (name: string) => string | undefined;

export type Verified =
  | { ok: true; deliveryId: string; bodySha256: string }
  | { ok: false; code: VerifyRefusal; error: string };

export type VerifyRefusal =
  | 'missing_signature'
  | 'bad_signature'
  | 'missing_delivery_id'
  | 'stale_timestamp'
  | 'future_timestamp'
  | 'bad_timestamp';

/** Hex sha256 of a body: what the hub keeps of it. */
export function bodyHash(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

/** Equal bytes, in time that does not depend on where they differ. */
function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function refuse(code: VerifyRefusal, error: string): Verified {
  return { ok: false, code, error };
}

function deliveryId(value: string | undefined, header: string): string | Verified {
  if (value === undefined || value === '') return refuse('missing_delivery_id', `no ${header} header`);
  if (value.length > MAX_ID || !/^[A-Za-z0-9._:~+=/-]+$/.test(value))
    return refuse('missing_delivery_id', `${header}: not a delivery id`);
  return value;
}

/** `sha256=<hex>` over the body with `secret`, as GitHub (X-Hub-Signature-256) and Jira (X-Hub-Signature) send it. */
function verifyHexSignature(
  secret: string,
  body: Uint8Array,
  given: string | undefined,
  header: string,
): Verified | undefined {
  if (given === undefined || given === '') return refuse('missing_signature', `no ${header} header`);
  const m = /^sha256=([0-9a-f]{64})$/i.exec(given.trim());
  if (!m?.[1]) return refuse('bad_signature', `${header}: expected sha256=<64 hex digits>`);
  const expected = createHmac('sha256', secret).update(body).digest();
  if (!sameBytes(Buffer.from(m[1], 'hex'), expected))
    return refuse('bad_signature', `${header}: the signature does not match the body`);
  return undefined;
}

/** A GitHub delivery: `X-Hub-Signature-256`, deduplicated on `X-GitHub-Delivery`. */
export function verifyGithub(secret: string, headers: Headers, body: Uint8Array): Verified {
  const bad = verifyHexSignature(secret, body, headers('x-hub-signature-256'), 'X-Hub-Signature-256');
  if (bad) return bad;
  const id = deliveryId(headers('x-github-delivery'), 'X-GitHub-Delivery');
  if (typeof id !== 'string') return id;
  return { ok: true, deliveryId: id, bodySha256: bodyHash(body) };
}

/** A Jira delivery: `X-Hub-Signature` (WebSub, sha256), deduplicated on `X-Atlassian-Webhook-Identifier`. */
export function verifyJira(secret: string, headers: Headers, body: Uint8Array): Verified {
  const bad = verifyHexSignature(secret, body, headers('x-hub-signature'), 'X-Hub-Signature');
  if (bad) return bad;
  const id = deliveryId(headers('x-atlassian-webhook-identifier'), 'X-Atlassian-Webhook-Identifier');
  if (typeof id !== 'string') return id;
  return { ok: true, deliveryId: id, bodySha256: bodyHash(body) };
}

/** The key bytes of a Standard Webhooks secret, `whsec_<base64>`; undefined when it is not one. */
export function standardKey(secret: string): Buffer | undefined {
  const m = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret.trim());
  if (!m?.[1]) return undefined;
  const key = Buffer.from(m[1], 'base64');
  return key.length >= 16 ? key : undefined;
}

/** The `whsec_<base64>` form of key bytes. */
export function standardSecret(key: Buffer): string {
  return `whsec_${key.toString('base64')}`;
}

function standardSignature(key: Buffer, id: string, timestamp: string, body: Uint8Array): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}

/** The `webhook-signature` value for a message (what a sender computes; tests and reporters use it). */
export function signStandard(key: Buffer, id: string, timestamp: number, body: Uint8Array | string): string {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  return `v1,${standardSignature(key, id, String(timestamp), bytes).toString('base64')}`;
}

/**
 * A Standard Webhooks message: `webhook-id`, `webhook-timestamp` (seconds) within TOLERANCE_S of `nowMs`,
 * and a `webhook-signature` holding one or more space-separated `v1,<base64>`, any one of which may match
 * (a sender rotating its key signs with both).
 */
export function verifyStandard(key: Buffer, headers: Headers, body: Uint8Array, nowMs: number): Verified {
  const id = deliveryId(headers('webhook-id'), 'webhook-id');
  if (typeof id !== 'string') return id;
  // the signed text is `id.timestamp.body`: an id with a dot could borrow the timestamp's place
  if (id.includes('.')) return refuse('missing_delivery_id', 'webhook-id: a "." has no place in an id');
  const stamp = headers('webhook-timestamp');
  if (stamp === undefined || !/^[0-9]{1,12}$/.test(stamp))
    return refuse('bad_timestamp', 'webhook-timestamp: expected whole seconds since 1970');
  const skew = Number(stamp) - Math.floor(nowMs / 1000);
  if (skew < -TOLERANCE_S) return refuse('stale_timestamp', 'webhook-timestamp: more than 5 minutes old');
  if (skew > TOLERANCE_S) return refuse('future_timestamp', 'webhook-timestamp: more than 5 minutes ahead');
  const header = headers('webhook-signature');
  if (header === undefined || header.trim() === '')
    return refuse('missing_signature', 'no webhook-signature header');
  const given = header.trim().split(/ +/);
  if (given.length > MAX_SIGNATURES)
    return refuse('bad_signature', `webhook-signature: more than ${MAX_SIGNATURES} signatures`);
  const expected = standardSignature(key, id, stamp, body);
  let matched = false;
  for (const entry of given) {
    const m = /^v1,([A-Za-z0-9+/]+={0,2})$/.exec(entry);
    // every entry is compared, so the time taken says nothing about which one matched
    if (m?.[1] && sameBytes(Buffer.from(m[1], 'base64'), expected)) matched = true;
  }
  if (!matched) return refuse('bad_signature', 'webhook-signature: no v1 signature matches the message');
  return { ok: true, deliveryId: id, bodySha256: bodyHash(body) };
}

/** The event a delivery carries, as a workflow's `trigger.event` names it. */
export function deliveryEvent(
  source: WebhookSource,
  headers: Headers,
  payload: Record<string, unknown>,
): string {
  if (source === 'github') {
    const event = headers('x-github-event') ?? '';
    return typeof payload.action === 'string' ? `${event}.${payload.action}` : event;
  }
  if (source === 'jira') return typeof payload.webhookEvent === 'string' ? payload.webhookEvent : '';
  return typeof payload.type === 'string' ? payload.type : '';
}

/** Whether a delivery's event is the one a trigger names: exactly, or the family (`pull_request` takes `pull_request.opened`). */
export function eventMatches(wanted: string, got: string): boolean {
  return got === wanted || got.startsWith(`${wanted}.`);
}
