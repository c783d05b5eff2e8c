/**
 * `keel build --reviewers A,B --min-approvals N`: the written tests approved by a quorum of reviewer
 * agents through the hub instead of the person at the terminal. keel sends the tests to each reviewer
 * as a hub message, and counts only the hub's routed replies to those very messages, each from the
 * reviewer it went to, once per reviewer, whose first line is exactly `APPROVE`. Anything else (a
 * `REJECT: reason`, another wording, a message that is not the reply, text in the request itself, no
 * reply before `--review-timeout`) is no approval. The hub proves who answered; not that they are right.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { agentKey, hubFetch } from '../tools/hub-client.js';

export interface ReviewSetup {
  url: string;
  projectToken: string;
  /** Who keel build is on the hub (KEEL_AGENT_NAME): never one of its own reviewers. */
  name: string;
  stateDir: string;
  reviewers: string[];
  minApprovals: number;
  timeoutS: number;
}

export type Verdict =
  | { verdict: 'approve' }
  | { verdict: 'reject'; reason: string }
  | { verdict: 'invalid'; first_line: string };

export interface Vote {
  reviewer: string;
  /** The request keel sent to this reviewer. */
  message_id: string;
  /** The hub's reply to it, when one came. */
  reply_id: string | null;
  verdict: 'approve' | 'reject' | 'invalid' | 'no_reply';
  reason?: string;
}

export interface ReviewOutcome {
  approved: boolean;
  reason: string;
  reviewers: string[];
  min_approvals: number;
  votes: Vote[];
}

/** The strict reply format: the first line is exactly `APPROVE`, or `REJECT: reason`; nothing else. */
export function parseVerdict(body: string): Verdict {
  const first = body.split(/\r?\n/, 1)[0] ?? '';
  if (first.trim() === 'APPROVE') return { verdict: 'approve' };
  const reject = /^\s*REJECT:\s*(.*)$/.exec(first);
  if (reject) return { verdict: 'reject', reason: (reject[1] ?? '').trim() };
  return { verdict: 'invalid', first_line: first.slice(0, 200) };
}

/** The reviewers a `--reviewers` list names, or why it cannot be used. */
export function reviewerList(
  list: string,
  min: number | undefined,
  self: string | undefined,
): { reviewers: string[]; min: number } | string {
  const reviewers = list
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  if (!reviewers.length) return '--reviewers names no reviewer: --reviewers rev-a,rev-b';
  const twice = reviewers.find((r, i) => reviewers.indexOf(r) !== i);
  if (twice) return `--reviewers names ${twice} twice: each reviewer counts once`;
  if (self && reviewers.includes(self))
    return `--reviewers names ${self}, which is keel build itself (KEEL_AGENT_NAME): it cannot review its own tests`;
  const need = min ?? reviewers.length;
  if (!Number.isInteger(need) || need < 1 || need > reviewers.length)
    return `--min-approvals ${need}: from 1 to the ${reviewers.length} reviewer(s) named`;
  return { reviewers, min: need };
}

/** The request each reviewer gets: the feature, the format of an answer that counts, and the tests. */
export function reviewRequest(feature: string, tests: { files: string[]; patch: string }): string {
  return [
    'keel build asks you to review the acceptance tests for a feature before anything is built.',
    'Approved, they are frozen and the feature is built until they pass.',
    '',
    `Feature: ${feature}`,
    '',
    'Reply to this message. Its FIRST LINE must be exactly one of:',
    'APPROVE',
    'REJECT: <your reason>',
    'Any other first line counts as no approval.',
    '',
    `Tests (${tests.files.join(', ')}):`,
    '',
    tests.patch,
  ].join('\n');
}

/** Ask every reviewer in the hub and wait for the quorum, a rejection that makes it impossible, or the timeout. */
export async function hubReview(
  setup: ReviewSetup,
  request: { runId: string; feature: string; tests: { files: string[]; patch: string } },
  opts: { signal?: AbortSignal; progress?: (message: string) => void } = {},
): Promise<ReviewOutcome> {
  const key = await agentKey(setup);
  const call = (method: string, path: string, body?: unknown) =>
    hubFetch(setup.url, key, method, path, body).then((r) => r.json);
  const body = reviewRequest(request.feature, request.tests);
  const ttl = Math.min(7 * 24 * 3600, Math.max(60, Math.ceil(setup.timeoutS) + 60));
  const votes: Vote[] = [];
  for (const reviewer of setup.reviewers) {
    const sent = await call('POST', '/v1/messages', {
      to: reviewer,
      body,
      // a retried build run sends nothing twice
      idempotency_key: `keel-build-review:${request.runId}:${reviewer}`,
      ttl_s: ttl,
    });
    votes.push({ reviewer, message_id: sent.message.id as string, reply_id: null, verdict: 'no_reply' });
  }
  opts.progress?.(
    `review: the tests went to ${setup.reviewers.join(', ')} through the hub; ${setup.minApprovals} approval(s) needed within ${setup.timeoutS} s`,
  );
  const approvals = () => votes.filter((v) => v.verdict === 'approve').length;
  const open = () => votes.filter((v) => v.verdict === 'no_reply');
  const deadline = Date.now() + setup.timeoutS * 1000;
  // done when enough approved, or when the reviewers still to answer cannot make up the rest
  while (approvals() < setup.minApprovals && approvals() + open().length >= setup.minApprovals) {
    if (opts.signal?.aborted || Date.now() >= deadline) break;
    for (const vote of open()) {
      const found = await call('GET', `/v1/messages/${encodeURIComponent(vote.message_id)}`);
      const reply = found.reply as
        | { id: string; from: string; body: string; reply_to: string | null }
        | undefined;
      // the hub's routed reply to this very message, from the reviewer it went to
      if (
        !reply ||
        found.message.id !== vote.message_id ||
        found.message.to !== vote.reviewer ||
        reply.from !== vote.reviewer ||
        reply.reply_to !== vote.message_id
      )
        continue;
      const verdict = parseVerdict(reply.body);
      vote.reply_id = reply.id;
      vote.verdict = verdict.verdict;
      if (verdict.verdict === 'reject') vote.reason = verdict.reason;
      if (verdict.verdict === 'invalid') vote.reason = `first line is not APPROVE: ${verdict.first_line}`;
      opts.progress?.(
        `review: ${vote.reviewer} ${vote.verdict === 'approve' ? 'approves' : vote.verdict === 'reject' ? `rejects: ${vote.reason}` : `gave no verdict (${vote.reason})`}`,
      );
    }
    if (approvals() >= setup.minApprovals || approvals() + open().length < setup.minApprovals) break;
    await sleep(Math.max(0, Math.min(300, deadline - Date.now())));
  }
  // what is still unanswered is withdrawn: a late reply must not look like it counted
  for (const vote of open())
    await call('POST', `/v1/messages/${encodeURIComponent(vote.message_id)}/cancel`).catch(() => undefined);
  const n = approvals();
  const approved = n >= setup.minApprovals;
  const said = votes
    .map((v) =>
      v.verdict === 'approve'
        ? `${v.reviewer} approved`
        : v.verdict === 'no_reply'
          ? `${v.reviewer}: no reply`
          : `${v.reviewer}: ${v.verdict === 'reject' ? `rejected (${v.reason})` : 'no verdict'}`,
    )
    .join('; ');
  const timedOut = !approved && open().length > 0 && Date.now() >= deadline;
  return {
    approved,
    reason: approved
      ? `the tests were approved by ${n} of ${setup.reviewers.length} reviewers through the hub (${setup.minApprovals} needed): ${said}`
      : `the tests were not approved: ${n} approval(s) of the ${setup.minApprovals} needed${timedOut ? ` within the ${setup.timeoutS} s review timeout` : ''} (${said}); nothing built`,
    reviewers: setup.reviewers,
    min_approvals: setup.minApprovals,
    votes,
  };
}
