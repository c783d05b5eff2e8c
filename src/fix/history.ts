/**
 * `keel analyze-history`: refit the routing bands (src/model/difficulty.ts) from past fix runs.
 *
 * An example is a routed fix run's first attempt: the score its first call was routed with, the tier it
 * went to, and whether keel's verifier verified it (`fix_verdict`, never the model's claim). A first
 * attempt that failed on tier i says that score needed more than tier i: the threshold between tier i
 * and i+1 should be at or below it. Runs of the scripted provider (tests, `keel demo`) are left out.
 *
 * The split is grouped: every run of one repository and issue falls on one side, by a seeded hash, a
 * quarter held out. Each threshold is fitted on the rest (fewest misrouted first attempts), and both
 * the bands in force and the fitted ones are judged on the held-out runs: the difference in correctly
 * routed first attempts, with a paired bootstrap interval. Applied only when it is strictly better,
 * the interval excludes zero and there are enough runs.
 */
import { createHash } from 'node:crypto';
import type { EventLog, SessionRow, StoredEvent } from '../store/event-log.js';

/** Fewer runs than this and nothing is applied, whatever the numbers say. */
export const MIN_RUNS = 30;
const HELD_OUT = 0.25;
const BOOTSTRAP = 2000;

export interface HistoryExample {
  runId: string;
  /** repo + issue, hashed: what the split keeps on one side. */
  group: string;
  /** The boundary the attempt tells about: its tier's index (tier i vs i+1). */
  boundary: number;
  score: number;
  /** The verifier did not verify it: the tier was not enough. */
  hard: boolean;
}

export interface HistoryData {
  examples: HistoryExample[];
  /** Runs left out, by why. */
  excluded: Record<string, number>;
}

/** Every routed fix run's first attempt in the log, and how many runs were left out and why. */
export function collectHistory(log: EventLog, tiers: number): HistoryData {
  const excluded: Record<string, number> = {};
  const skip = (why: string) => {
    excluded[why] = (excluded[why] ?? 0) + 1;
  };
  const examples: HistoryExample[] = [];
  for (const run of log.listByMode(['fix'], 1_000_000)) {
    const example = exampleOf(log, run, tiers);
    if (typeof example === 'string') skip(example);
    else examples.push(example);
  }
  return { examples, excluded };
}

function exampleOf(log: EventLog, run: SessionRow, tiers: number): HistoryExample | string {
  if (run.provider === 'scripted') return 'scripted';
  const events = log.events(run.id);
  const routing = events.find((e) => e.type === 'fix_routing');
  if (!routing) return 'not routed';
  const verdict = events.find((e) => e.type === 'fix_verdict' && e.data.attempt === 1);
  if (!verdict) return 'no verdict';
  // the machine failed, not the model: it says nothing about the tier
  if (verdict.data.environmentProblem !== undefined) return 'environment problem';
  const attempt = log.childSessions(run.id).find((s) => s.mode === 'edit');
  const route = attempt && firstRoute(log.events(attempt.id));
  if (!route) return 'no routed call';
  const names = (routing.data.tiers as Array<{ name?: unknown }> | undefined)?.map((t) => t.name) ?? [];
  const boundary = names.indexOf(route.tier);
  // the strongest tier has nothing above it to be routed to
  if (boundary < 0 || boundary >= tiers - 1 || boundary >= names.length - 1) return 'strongest tier';
  return {
    runId: run.id,
    group: createHash('sha256').update(`${run.cwd}\0${run.prompt}`).digest('hex'),
    boundary,
    score: route.score,
    hard: verdict.data.status !== 'verified',
  };
}

function firstRoute(events: StoredEvent[]): { tier: string; score: number } | undefined {
  const request = events.find((e) => e.type === 'model_request' && e.data.route !== undefined);
  const route = request?.data.route as { tier?: unknown; score?: unknown } | undefined;
  return typeof route?.tier === 'string' && typeof route.score === 'number'
    ? { tier: route.tier, score: route.score }
    : undefined;
}

/** Whether a group is held out: the seeded hash of its key, a quarter of them. */
export function heldOut(group: string, seed: string): boolean {
  const h = createHash('sha256').update(`${seed}\0${group}`).digest();
  return h.readUInt32BE(0) / 2 ** 32 < HELD_OUT;
}

/** Routed right: sent above the boundary when the tier was not enough, kept at it when it was. */
function right(example: HistoryExample, thresholds: readonly number[]): boolean {
  const t = thresholds[example.boundary] ?? 1;
  return example.score >= t === example.hard;
}

/** The threshold with the fewest misrouted examples; ties go to the one nearest `current`. */
function fitOne(examples: HistoryExample[], current: number): number {
  if (!examples.length) return current;
  const scores = [...new Set(examples.map((e) => e.score))].sort((a, b) => a - b);
  const candidates = [0, ...scores.slice(1).map((s, i) => round((s + (scores[i] ?? s)) / 2)), 1.0001];
  let best = current;
  let fewest = Number.POSITIVE_INFINITY;
  for (const t of candidates) {
    const wrong = examples.filter((e) => !right(e, [...Array(e.boundary).fill(0), t])).length;
    if (wrong < fewest || (wrong === fewest && Math.abs(t - current) < Math.abs(best - current))) {
      fewest = wrong;
      best = t;
    }
  }
  return Math.min(1, best);
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/** A seeded generator (mulberry32), so the interval is the same each time for the same data. */
function random(seed: string): () => number {
  let a = createHash('sha256').update(seed).digest().readUInt32BE(0);
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface HistoryAnalysis {
  runs: number;
  excluded: Record<string, number>;
  train: number;
  heldout: number;
  current: number[];
  fitted: number[];
  /** On the held-out runs: the share routed right by the bands in force and by the fitted ones. */
  currentAccuracy: number | null;
  fittedAccuracy: number | null;
  improvement: number | null;
  /** 95% paired bootstrap interval of the improvement. */
  interval: [number, number] | null;
  apply: boolean;
  /** Why it is applied or not, in words. */
  verdict: string;
}

/** Fit the bands on the training runs and judge them against `current` on the held-out ones. */
export function analyzeHistory(data: HistoryData, current: readonly number[], seed: string): HistoryAnalysis {
  const train = data.examples.filter((e) => !heldOut(e.group, seed));
  const test = data.examples.filter((e) => heldOut(e.group, seed));
  const fitted: number[] = [];
  for (const [i, now] of current.entries()) {
    const t = fitOne(
      train.filter((e) => e.boundary === i),
      now,
    );
    fitted.push(round(Math.max(t, fitted[i - 1] ?? 0)));
  }
  const diffs = test.map((e) => Number(right(e, fitted)) - Number(right(e, current)));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const accuracy = (ts: readonly number[]) =>
    test.length ? round(mean(test.map((e) => Number(right(e, ts))))) : null;
  let interval: [number, number] | null = null;
  if (test.length) {
    const next = random(seed);
    const means = Array.from({ length: BOOTSTRAP }, () =>
      mean(Array.from({ length: diffs.length }, () => diffs[Math.floor(next() * diffs.length)] ?? 0)),
    ).sort((a, b) => a - b);
    interval = [
      round(means[Math.floor(BOOTSTRAP * 0.025)] ?? 0),
      round(means[Math.floor(BOOTSTRAP * 0.975)] ?? 0),
    ];
  }
  const improvement = test.length ? round(mean(diffs)) : null;
  const runs = data.examples.length;
  const why =
    runs < MIN_RUNS
      ? `${runs} routed runs, fewer than ${MIN_RUNS}`
      : !test.length
        ? 'no held-out runs'
        : (improvement ?? 0) <= 0
          ? `the fitted bands route no more held-out first attempts right (${signed(improvement ?? 0)})`
          : (interval?.[0] ?? 0) <= 0
            ? `the improvement ${signed(improvement ?? 0)} has an interval [${interval?.join(', ')}] that does not exclude zero`
            : undefined;
  return {
    runs,
    excluded: data.excluded,
    train: train.length,
    heldout: test.length,
    current: [...current],
    fitted,
    currentAccuracy: accuracy(current),
    fittedAccuracy: accuracy(fitted),
    improvement,
    interval,
    apply: why === undefined,
    verdict:
      why === undefined
        ? `better on held-out runs: ${signed(improvement ?? 0)} routed right, 95% interval [${interval?.join(', ')}]`
        : `marginal, not applied: ${why}`,
  };
}

function signed(x: number): string {
  return `${x > 0 ? '+' : ''}${x}`;
}
