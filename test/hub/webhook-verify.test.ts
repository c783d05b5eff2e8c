/** Webhook signatures against the senders' own published examples, and the window's edges. */
import { describe, expect, it } from 'vitest';
import { runSignalKey, runSignalSecret } from '../../src/hub/signals.js';
import {
  eventMatches,
  signStandard,
  standardKey,
  verifyGithub,
  verifyJira,
  verifyStandard,
} from '../../src/hub/webhook-verify.js';

const headers = (h: Record<string, string>) => (name: string) => h[name.toLowerCase()];

describe('webhook signatures', () => {
  it("GitHub's documented example verifies, and Jira's scheme is the same HMAC under its own header", () => {
    // docs.github.com, "Validating webhook deliveries": this secret and body give this signature
    const sig = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    const body = Buffer.from('Hello, World!');
    const secret = "It's a Secret to Everybody";
    expect(
      verifyGithub(secret, headers({ 'x-hub-signature-256': sig, 'x-github-delivery': 'd1' }), body),
    ).toMatchObject({
      ok: true,
      deliveryId: 'd1',
    });
    expect(
      verifyJira(secret, headers({ 'x-hub-signature': sig, 'x-atlassian-webhook-identifier': '42' }), body),
    ).toMatchObject({
      ok: true,
      deliveryId: '42',
    });
    expect(
      verifyGithub(
        secret,
        headers({ 'x-hub-signature-256': sig.replace('757', '758'), 'x-github-delivery': 'd1' }),
        body,
      ),
    ).toMatchObject({
      ok: false,
      code: 'bad_signature',
    });
    // a delivery id that is not one (a newline to forge log lines, or absurdly long) is refused
    expect(
      verifyGithub(secret, headers({ 'x-hub-signature-256': sig, 'x-github-delivery': 'a\nb' }), body),
    ).toMatchObject({
      ok: false,
      code: 'missing_delivery_id',
    });
  });

  it("Standard Webhooks: the spec's example signature, and a window of five minutes either way", () => {
    // the example of the Standard Webhooks specification
    const key = standardKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw') as Buffer;
    const body = '{"test": 2432232314}';
    const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
    const at = 1614265330;
    expect(signStandard(key, id, at, body)).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    const h = (sig: string) =>
      headers({ 'webhook-id': id, 'webhook-timestamp': String(at), 'webhook-signature': sig });
    const good = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
    const bytes = Buffer.from(body);
    expect(verifyStandard(key, h(good), bytes, at * 1000).ok).toBe(true);
    expect(verifyStandard(key, h(`v1,bm90IGl0 v2,xx ${good}`), bytes, at * 1000).ok).toBe(true);
    expect(verifyStandard(key, h(good), bytes, (at + 300) * 1000).ok).toBe(true);
    expect(verifyStandard(key, h(good), bytes, (at + 301) * 1000)).toMatchObject({ code: 'stale_timestamp' });
    expect(verifyStandard(key, h(good), bytes, (at - 301) * 1000)).toMatchObject({
      code: 'future_timestamp',
    });
    expect(verifyStandard(key, h(good.replace('v1,', 'v2,')), bytes, at * 1000)).toMatchObject({
      code: 'bad_signature',
    });
    expect(verifyStandard(key, h(Array(9).fill(good).join(' ')), bytes, at * 1000)).toMatchObject({
      code: 'bad_signature',
    });
    // an id that holds a dot could take the timestamp's place in the signed text
    const shifted = headers({
      'webhook-id': `${id}.${at}`,
      'webhook-timestamp': String(at),
      'webhook-signature': good,
    });
    expect(verifyStandard(key, shifted, bytes, at * 1000)).toMatchObject({ code: 'missing_delivery_id' });
    expect(standardKey('whsec_short')).toBeUndefined();
    expect(standardKey('not-a-secret')).toBeUndefined();
  });

  it('a run signal key is bound to its run and secret', () => {
    const secret = 'whsec_c2lnbmFscy1zZWNyZXQtZm9yLXRlc3Rz';
    expect(runSignalKey(secret, 'run-1').equals(runSignalKey(secret, 'run-2'))).toBe(false);
    expect(runSignalSecret(secret, 'run-1')).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(standardKey(runSignalSecret(secret, 'run-1'))?.equals(runSignalKey(secret, 'run-1'))).toBe(true);
  });

  it('events match exactly or by family', () => {
    expect(eventMatches('pull_request', 'pull_request.opened')).toBe(true);
    expect(eventMatches('pull_request.opened', 'pull_request.closed')).toBe(false);
    expect(eventMatches('pull_request', 'pull_request_review.submitted')).toBe(false);
  });
});
