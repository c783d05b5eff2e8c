/** The difficulty score: the issue's own text and the struggle the log shows, nothing else; its bands and calibration. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/load.js';
import { configSchema } from '../../src/config/schema.js';
import { attemptPrompt, planPrompt } from '../../src/fix/prompts.js';
import { createModelClient } from '../../src/model/create.js';
import {
  type Calibration,
  calibrationPath,
  defaultThresholds,
  difficultyOfRun,
  readCalibration,
  scoreDifficulty,
  thresholdsFor,
  tierIndex,
  writeCalibration,
} from '../../src/model/difficulty.js';
import { type ScriptServer, startScriptServer } from '../../src/model/script-server.js';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { tempDir } from '../helpers/tmp.js';
import { collect, signal, user } from './support.js';

const EASY = 'add(2, 3) returns 6 instead of 5.';
const HARD = `Saving a project with nested workspaces crashes in src/store/save.ts and src/store/paths.ts.
The \`resolveWorkspace\` call in \`ProjectStore.save\` passes a relative path to \`normalizeRoot\`,
which then fails in lib/fs/walk.js and corrupts .keel/state.json when \`flushPending\` runs.

TypeError: Cannot read properties of undefined (reading 'root')
    at normalizeRoot (src/store/paths.ts:41:17)
    at resolveWorkspace (src/store/paths.ts:88:10)
    at ProjectStore.save (src/store/save.ts:120:22)
    at flushPending (src/store/save.ts:201:5)
    at processTicksAndRejections (node:internal/process/task_queues:95:5)
    at async Command.run (src/cli/run.ts:55:3)
Error: save failed, state left half written
AssertionError: expected workspace count 3, got 1

Expected: nested workspaces are saved with paths relative to the top root, and \`loadProject\`
reads them back. This worked before the refactor of \`WorkspaceIndex\` and \`toPosixPath\`.`;

const runs: Array<{ close(): void }> = [];
afterEach(() => {
  for (const db of runs.splice(0)) db.close();
});

/** A fix run's log in a fresh database: its session row holds the issue, as openRunLog writes it. */
function runLog(issue: string, file = join(tempDir(), 'keel.db')) {
  const db = openDb(file);
  runs.push(db);
  const log = new EventLog(db);
  log.createSession({ id: 'run', mode: 'fix', cwd: '/r', provider: 'openai', model: 'm', prompt: issue });
  return { log, file };
}

/** A plan session under the run, with the system prompt and keel's prompt around the issue, as a fix records them. */
function planSession(log: EventLog, issue: string, id = 'plan') {
  log.createSession({
    id,
    parentId: 'run',
    mode: 'plan',
    cwd: '/r',
    provider: 'openai',
    model: 'm',
    prompt: '',
  });
  log.append(id, 'session_start', {
    system_prompt: `You are keel. Tools: read_file(path), edit_file(path, old, new), run_tests(). See src/a.ts, src/b.ts.\n${'rules '.repeat(400)}`,
  });
  const before = { command: 'npm test', exitCode: 1, results: [], parsed: true, durationMs: 1 } as never;
  log.append(id, 'user_message', { text: planPrompt(issue, before, ['test/a.test.ts > adds']) });
}

describe('scoreDifficulty', () => {
  it('scores in [0, 1]: an easy issue low, a long one with a stack trace, paths and symbols high, with the signals named', () => {
    const easy = scoreDifficulty(EASY);
    const hard = scoreDifficulty(HARD);
    expect(easy.score).toBeGreaterThanOrEqual(0);
    expect(easy.score).toBeLessThan(0.2);
    expect(hard.score).toBeGreaterThan(0.5);
    expect(hard.score).toBeLessThanOrEqual(1);
    expect(hard.signals).toMatchObject({ stack_frames: 6, failed_attempts: 0, turns: 0 });
    expect(hard.signals.paths).toBeGreaterThanOrEqual(5);
    expect(hard.signals.error_lines).toBeGreaterThanOrEqual(2);
    expect(hard.signals.symbols).toBeGreaterThanOrEqual(8);
    expect(hard.reason).toMatch(/6 stack frames/);
    // nothing pushes past 1, however much there is
    expect(
      scoreDifficulty(`${HARD}\n`.repeat(50), [
        ...Array(9).fill({ type: 'fix_verdict', data: { status: 'failed', tests: { failed: 40 } } }),
      ]).score,
    ).toBeLessThanOrEqual(1);
  });

  it('struggle raises the score: a failed attempt, the tests it left failing, turns spent; a verified verdict does not', () => {
    const base = scoreDifficulty(EASY).score;
    const failed = scoreDifficulty(EASY, [
      { type: 'fix_verdict', data: { status: 'failed', tests: { failed: 2 } } },
    ]);
    expect(failed.score).toBeGreaterThanOrEqual(0.5);
    expect(failed.signals).toMatchObject({ failed_attempts: 1, failing_tests: 2 });
    expect(failed.reason).toContain('1 failed attempt, 2 tests still failing');
    const turns = Array(10).fill({ type: 'assistant_message', data: {} });
    expect(scoreDifficulty(EASY, turns).score).toBeGreaterThan(base);
    expect(scoreDifficulty(EASY, [{ type: 'fix_verdict', data: { status: 'verified' } }]).score).toBe(base);
  });

  it("reads the issue's own text only: keel's system prompt and its prompts around the issue change nothing", () => {
    const { log } = runLog(EASY);
    const alone = difficultyOfRun(log, 'run');
    expect(alone).toEqual(scoreDifficulty(EASY));
    planSession(log, EASY);
    // the attempt's prompt carries the verifier's output: error lines and paths that are not the issue's
    log.createSession({
      id: 'a1',
      parentId: 'run',
      mode: 'edit',
      cwd: '/r',
      provider: 'o',
      model: 'm',
      prompt: '',
    });
    log.append('a1', 'user_message', {
      text: attemptPrompt(
        EASY,
        'edit src/add.ts',
        ['t'],
        'FAIL src/add.test.ts\nError: expected 5\n    at add (src/add.ts:1:1)',
      ),
    });
    log.append('run', 'fix_plan', { plan: 'edit src/add.ts, src/math/index.ts, lib/x.js' });
    expect(difficultyOfRun(log, 'run')).toEqual(alone);
  });

  it('the same log scores the same when read again by another process (a resume), a request without its answer included', () => {
    const { log, file } = runLog(HARD);
    planSession(log, HARD);
    log.append('plan', 'assistant_message', { text: 'plan' });
    log.append('run', 'fix_verdict', { attempt: 1, status: 'failed', tests: { passed: 3, failed: 1 } });
    log.createSession({
      id: 'a2',
      parentId: 'run',
      mode: 'edit',
      cwd: '/r',
      provider: 'o',
      model: 'm',
      prompt: '',
    });
    log.append('a2', 'assistant_message', { text: 'x' });
    log.createSession({
      id: 'sub',
      parentId: 'a2',
      mode: 'edit',
      cwd: '/r',
      provider: 'o',
      model: 'm',
      prompt: '',
    });
    log.append('sub', 'assistant_message', { text: 'a subagent turn counts too' });
    const before = difficultyOfRun(log, 'run');
    expect(before.signals).toMatchObject({ failed_attempts: 1, failing_tests: 1, turns: 3 });
    // killed after the request was recorded, before its answer: the re-issued call scores as the first did
    log.append('a2', 'model_request', { round: 2 });
    const again = new EventLog(openDb(file));
    expect(difficultyOfRun(again, 'run')).toEqual(before);
  });
});

describe('bands', () => {
  it('evenly spaced by default; a score at a threshold goes up', () => {
    expect(defaultThresholds(1)).toEqual([]);
    expect(defaultThresholds(2)).toEqual([0.5]);
    expect(defaultThresholds(3)).toEqual([0.333, 0.667]);
    expect([0, 0.49, 0.5, 0.9].map((s) => tierIndex(s, [0.5]))).toEqual([0, 0, 1, 1]);
    expect([0.2, 0.4, 0.7].map((s) => tierIndex(s, [0.333, 0.667]))).toEqual([0, 1, 2]);
  });

  it('the calibration file replaces them; absent is none; a bad one is a ConfigError naming the file', () => {
    const paths = { stateDir: tempDir() };
    expect(readCalibration(paths)).toBeUndefined();
    expect(thresholdsFor(3, paths)).toEqual({ thresholds: [0.333, 0.667], source: 'default' });
    const cal: Calibration = {
      version: 1,
      thresholds: [0.3],
      fitted_at: '2026-12-05T04:00:00Z',
      runs: 40,
      heldout: { runs: 10, cost_saved: 0.2 },
    };
    const file = writeCalibration(paths, cal);
    expect(file).toBe(calibrationPath(paths));
    expect(readCalibration(paths)).toEqual(cal);
    expect(thresholdsFor(2, paths)).toEqual({ thresholds: [0.3], source: file });
    expect(() => thresholdsFor(3, paths)).toThrow(`${file} has 1 thresholds, but 3 tiers need 2`);
    for (const bad of [
      '{',
      '{"version":2}',
      JSON.stringify({ ...cal, thresholds: [0.6, 0.2] }),
      JSON.stringify({ ...cal, extra: 1 }),
    ]) {
      writeFileSync(file, bad);
      expect(() => readCalibration(paths)).toThrow(ConfigError);
      expect(() => readCalibration(paths)).toThrow(file);
    }
    expect(() => readCalibration(paths)).toThrow('Unrecognized key: "extra"');
    expect(() => writeCalibration(paths, { ...cal, thresholds: [2] })).toThrow();
  });
});

describe('a routed model client', () => {
  const servers: ScriptServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it('sends each call to the tier its score falls in, and says so; with no router nothing routes', async () => {
    const cheap = await startScriptServer({ turns: [{ text: 'cheap 1' }, { text: 'cheap 2' }] });
    const strong = await startScriptServer({ turns: [{ text: 'strong 1' }] });
    servers.push(cheap, strong);
    const config = configSchema.parse({
      provider: 'openai',
      retries: { max: 0 },
      routing: {
        tiers: [
          { name: 'cheap', model: 'c', base_url: cheap.url, api_key_env: 'CHEAP_KEY' },
          { name: 'strong', model: 's', base_url: strong.url, api_key_env: 'STRONG_KEY' },
        ],
      },
    });
    const scores = [0.1, 0.7, 0.2];
    const client = createModelClient(
      config,
      { CHEAP_KEY: 'ck', STRONG_KEY: 'sk' },
      {
        routing: {
          thresholds: [0.5],
          difficulty: () => ({ score: scores.shift() ?? 0, signals: { n: 1 }, reason: 'r' }),
        },
      },
    );
    const ask = { messages: [user('hi')], tools: [] };
    const tiers: string[] = [];
    for (let i = 0; i < 3; i++) {
      tiers.push(client.route()?.tier ?? '');
      await collect(client.stream(ask, signal()));
    }
    expect(tiers).toEqual(['cheap', 'strong', 'cheap']);
    expect(client.lastRoute).toMatchObject({ tier: 'cheap', model: 'c', baseUrl: cheap.url, score: 0.2 });
    expect(client.lastRoute?.reason).toContain('score 0.2 in [0, 0.5): tier cheap');
    expect(cheap.requests.map((r) => r.headers.authorization)).toEqual(['Bearer ck', 'Bearer ck']);
    expect(strong.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk']);
    // tiers without a router (the run's --model): the top-level model, unrouted
    const plain = createModelClient({ ...config, model: 'top', base_url: strong.url }, {});
    expect(plain.route()).toBeUndefined();
    expect(plain.currentModel()).toBe('top');
  });
});
