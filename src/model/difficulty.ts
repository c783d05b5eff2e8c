/**
 * How hard a fix looks at the moment of a model call, as a score in [0, 1] with its signals and a
 * reason in words, and the bands that turn a score into a tier (src/model/routing.ts).
 *
 * The score reads two things only, both from the run's event log, so a resumed run scores the same:
 * - the issue's own text (the fix's session row keeps it), never keel's prompts around it: its length,
 *   the files and paths it names, stack frames, error lines and distinct code symbols;
 * - struggle: failed attempts and the tests still failing after the last one (the verifier's
 *   `fix_verdict` events), and the turns the run has spent (its sessions' `assistant_message` events).
 *
 * Bands: `tiers - 1` ascending thresholds; a score at or above the i-th goes to tier i or higher.
 * Evenly spaced by default; KEEL_HOME/routing-calibration.json (written by `keel analyze-history
 * --apply`) replaces them.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as z from 'zod';
import { ConfigError } from '../config/load.js';
import type { KeelPaths } from '../config/paths.js';
import type { EventLog } from '../store/event-log.js';

export interface Difficulty {
  /** In [0, 1]: 0 looks trivial, 1 as hard as keel can tell. */
  score: number;
  /** The numbers the score was made of, by name. */
  signals: Record<string, number>;
  /** The score in words: what made it. */
  reason: string;
}

/** An event as the log keeps it: its type and its data. */
export interface LoggedEvent {
  type: string;
  data: Record<string, unknown>;
}

/** x / (x + half): 0 at 0, 0.5 at `half`, towards 1 as x grows. */
const saturate = (x: number, half: number) => x / (x + half);

/** Each signal's weight (how far it alone can push the score) and the value that takes it halfway. */
const TEXT = {
  words: { weight: 0.35, half: 200 },
  paths: { weight: 0.35, half: 3 },
  stack_frames: { weight: 0.35, half: 6 },
  error_lines: { weight: 0.2, half: 3 },
  symbols: { weight: 0.3, half: 10 },
} as const;
/** Each failed attempt halves the distance to 1; turns and failing tests push less. */
const FAILED_ATTEMPT = 0.5;
const TURNS = { weight: 0.4, half: 25 };
const FAILING_TESTS = { weight: 0.2, half: 5 };

const STACK_FRAME = [
  /^\s*at\s+\S/, // JavaScript, Java
  /^\s*File "[^"]+", line \d+/, // Python
  /^\s*\S+\.(go|rs|c|cc|cpp|zig):\d+/, // Go, Rust, C
  /^\s*\d+:\s+0x[0-9a-f]+/i, // Rust's backtrace
  /^\s*#\d+\s+\S/, // gdb, C++
];
const ERROR_LINE = /(error|exception)\b|\b(panic(ked)?|fatal|fail(ed|ure|ing|s)?|traceback|assert(ion)?)\b/i;
const PATH =
  /(?:[\w.-]+\/)+[\w.-]+|\b[\w-]+\.(?:ts|tsx|js|jsx|mjs|cjs|py|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|scala|sh|toml|json|ya?ml|md)\b/g;
const SYMBOL = /`([^`\n]{1,80})`|\b([a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|[A-Za-z]+_\w+|\w+(?=\())/g;

/** The issue text's own signals: length, paths named, stack frames, error lines, distinct code symbols. */
export function issueSignals(issue: string): Record<keyof typeof TEXT, number> {
  // a URL is not a path in the repository
  const text = issue.replace(/\bhttps?:\/\/\S+/g, ' ');
  const lines = text.split('\n');
  const frames = lines.filter((line) => STACK_FRAME.some((re) => re.test(line)));
  const errors = lines.filter((line) => ERROR_LINE.test(line) && !frames.includes(line));
  const paths = new Set(text.match(PATH) ?? []);
  const symbols = new Set([...text.matchAll(SYMBOL)].map((m) => (m[1] ?? m[2] ?? '').trim()));
  symbols.delete('');
  return {
    words: text.split(/\s+/).filter(Boolean).length,
    paths: paths.size,
    stack_frames: frames.length,
    error_lines: errors.length,
    symbols: symbols.size,
  };
}

/** Struggle so far, from the run's events: failed attempts, tests failing after the last, turns spent. */
export function struggleSignals(events: readonly LoggedEvent[]): {
  failed_attempts: number;
  failing_tests: number;
  turns: number;
} {
  let failed = 0;
  let failing = 0;
  let turns = 0;
  for (const event of events) {
    if (event.type === 'assistant_message') turns++;
    if (event.type !== 'fix_verdict') continue;
    if (event.data.status === 'verified') continue;
    failed++;
    const tests = event.data.tests as { failed?: unknown } | undefined;
    failing = typeof tests?.failed === 'number' ? tests.failed : 0;
  }
  return { failed_attempts: failed, failing_tests: failing, turns };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const round = (x: number) => Math.round(x * 1000) / 1000;

/** The score of a call: the issue's text, then the run's struggle, each pushing towards 1. */
export function scoreDifficulty(issue: string, events: readonly LoggedEvent[] = []): Difficulty {
  const text = issueSignals(issue);
  const struggle = struggleSignals(events);
  let textLeft = 1;
  for (const [name, { weight, half }] of Object.entries(TEXT))
    textLeft *= 1 - weight * saturate(text[name as keyof typeof TEXT], half);
  const struggleLeft =
    FAILED_ATTEMPT ** struggle.failed_attempts *
    (1 - TURNS.weight * saturate(struggle.turns, TURNS.half)) *
    (1 - FAILING_TESTS.weight * saturate(struggle.failing_tests, FAILING_TESTS.half));
  const score = round(1 - textLeft * struggleLeft);
  const issueScore = round(1 - textLeft);
  const said = [
    plural(text.words, 'word'),
    ...(text.paths ? [plural(text.paths, 'path')] : []),
    ...(text.stack_frames ? [plural(text.stack_frames, 'stack frame')] : []),
    ...(text.error_lines ? [plural(text.error_lines, 'error line')] : []),
    ...(text.symbols ? [plural(text.symbols, 'code symbol')] : []),
  ];
  const run = [
    ...(struggle.failed_attempts ? [plural(struggle.failed_attempts, 'failed attempt')] : []),
    ...(struggle.failing_tests ? [`${plural(struggle.failing_tests, 'test')} still failing`] : []),
    plural(struggle.turns, 'turn'),
  ];
  return {
    score,
    signals: { ...text, ...struggle, issue_score: issueScore, struggle_score: round(1 - struggleLeft) },
    reason: `issue ${issueScore} (${said.join(', ')}); run so far ${round(1 - struggleLeft)} (${run.join(', ')})`,
  };
}

/** The run's own events and every session's under it (plan, attempts, their subagents). */
export function runEvents(log: EventLog, runId: string): LoggedEvent[] {
  const out: LoggedEvent[] = [];
  const visit = (id: string) => {
    out.push(...log.events(id));
    for (const child of log.childSessions(id)) visit(child.id);
  };
  visit(runId);
  return out;
}

/** The score of a fix run's next call, from its log alone: the issue its session row keeps, and its events. */
export function difficultyOfRun(log: EventLog, runId: string): Difficulty {
  return scoreDifficulty(log.getSession(runId)?.prompt ?? '', runEvents(log, runId));
}

/** Evenly spaced bands for `tiers` tiers: [0.5] for two, [1/3, 2/3] for three. */
export function defaultThresholds(tiers: number): number[] {
  return Array.from({ length: Math.max(0, tiers - 1) }, (_, i) => round((i + 1) / tiers));
}

/** The tier a score goes to: how many thresholds it reaches. */
export function tierIndex(score: number, thresholds: readonly number[]): number {
  return thresholds.filter((t) => score >= t).length;
}

export const calibrationSchema = z.strictObject({
  version: z.literal(1),
  /** Ascending, each in [0, 1]: one fewer than the tiers. */
  thresholds: z
    .array(z.number().min(0).max(1))
    .refine((t) => t.every((x, i) => i === 0 || x >= (t[i - 1] ?? 0)), 'must be ascending'),
  /** When it was fitted (ISO 8601). */
  fitted_at: z.string().min(1),
  /** How many runs it was fitted on. */
  runs: z.number().int().nonnegative(),
  /** What the held-out quarter showed (analyze-history says what it measured). */
  heldout: z.record(z.string(), z.unknown()),
});
export type Calibration = z.infer<typeof calibrationSchema>;

/** Where the calibration lives: KEEL_HOME/routing-calibration.json. */
export function calibrationPath(paths: Pick<KeelPaths, 'stateDir'>): string {
  return join(paths.stateDir, 'routing-calibration.json');
}

/** The calibration, or undefined when there is none; a file that is there but wrong is a ConfigError naming it. */
export function readCalibration(paths: Pick<KeelPaths, 'stateDir'>): Calibration | undefined {
  const file = calibrationPath(paths);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`cannot read the routing calibration ${file}: ${(err as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`invalid JSON in the routing calibration ${file}: ${(err as Error).message}`);
  }
  const result = calibrationSchema.safeParse(value);
  if (result.success) return result.data;
  const lines = result.error.issues.map((i) => `"${i.path.join('.') || '(root)'}": ${i.message}`);
  throw new ConfigError(
    `invalid routing calibration ${file} (remove it, or run keel analyze-history --apply again):\n  ${lines.join('\n  ')}`,
  );
}

/** Write the calibration (validated first) beside itself and rename it into place. */
export function writeCalibration(paths: Pick<KeelPaths, 'stateDir'>, calibration: Calibration): string {
  const valid = calibrationSchema.parse(calibration);
  const file = calibrationPath(paths);
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(valid, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
  return file;
}

/**
 * The thresholds for `tiers` tiers: the calibration's when there is one, else evenly spaced. A
 * calibration fitted for another number of tiers is a ConfigError: its bands would mean nothing.
 */
export function thresholdsFor(
  tiers: number,
  paths: Pick<KeelPaths, 'stateDir'>,
): { thresholds: number[]; source: string } {
  const calibration = readCalibration(paths);
  if (!calibration) return { thresholds: defaultThresholds(tiers), source: 'default' };
  if (calibration.thresholds.length !== tiers - 1)
    throw new ConfigError(
      `the routing calibration ${calibrationPath(paths)} has ${calibration.thresholds.length} thresholds, but ${tiers} tiers need ${tiers - 1}: run keel analyze-history --apply again, or remove it`,
    );
  return { thresholds: calibration.thresholds, source: calibrationPath(paths) };
}
