/** `keel runs list|show|prune`, `keel fix --clean`, and runs' sessions in `keel sessions list`, through the real binary. */
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ScriptTurn } from '../../src/model/script.js';
import { git } from '../helpers/tmp.js';
import { editTurns, fixtureRepo, leftovers, planTurns } from './fix-harness.js';
import { type KeelRun, keel, keelHome, model, modelFlags } from './harness.js';

const BUGGY_DIVISOR = '  return sum(values) / (values.length + 1);';
const PLAN = planTurns('src/stats.js', '1. Divide by values.length.');
const RIGHT_FIX = editTurns('src/stats.js', BUGGY_DIVISOR, '  return sum(values) / values.length;', 'Fixed.');
const IRRELEVANT = editTurns('README.md', 'Small statistics helpers.', 'Small, tested helpers.', 'Fixed!');

interface RunDoc {
  run_id: string;
  kind: string;
  verdict: string;
  code: string;
  attempts: number;
  cost_usd: number | null;
  branch: string | null;
  worktree: string | null;
  run_dir: string | null;
  repo: string | null;
  pruned: boolean;
}

async function fixRun(
  repo: string,
  home: string,
  turns: ScriptTurn[],
  issue: string,
): Promise<{ session_id: string; branch: string; cost_usd: number | null }> {
  const server = await model(turns);
  const flags = [...modelFlags(server, 'priced'), '--issue', issue];
  const run = await keel(['fix', '--repo', repo, '--json', '--max-attempts', '1', ...flags], {
    cwd: home,
    home,
    timeoutMs: 25_000,
  });
  const doc = JSON.parse(run.stdout);
  expect(doc.branch, run.stderr).toMatch(/^keel\/fix-/);
  return doc;
}

async function runsList(home: string, ...args: string[]): Promise<RunDoc[]> {
  const run = await keel(['runs', 'list', '--json', ...args], { cwd: home, home });
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout).runs as RunDoc[];
}

const ok = (run: KeelRun) => expect(run.code, run.stdout + run.stderr).toBe(0);

describe('keel runs', () => {
  it('lists fix runs newest first with verdict, attempts and what they kept; show prints the report', async () => {
    const repo = fixtureRepo('stats');
    const home = keelHome('[pricing.priced]\ninput_per_mtok = 2.0\noutput_per_mtok = 10.0\n');
    const verified = await fixRun(repo, home, [...PLAN, ...RIGHT_FIX], 'mean is wrong');
    const failed = await fixRun(repo, home, [...PLAN, ...IRRELEVANT], 'mean is still wrong');
    const looker = await model([{ text: 'nothing to change' }]);
    const loop = await keel(
      ['loop', ...modelFlags(looker), '--max-iterations', '1', '--json', '-m', 'look'],
      {
        cwd: repo,
        home,
      },
    );
    const loopId = JSON.parse(loop.stdout).session_id;

    const [newest, ...runs] = await runsList(home);
    expect(newest).toMatchObject({
      run_id: loopId,
      kind: 'loop',
      verdict: 'BUDGET_EXCEEDED',
      attempts: 1,
      branch: null,
    });
    expect(runs.map((r) => r.run_id)).toEqual([failed.session_id, verified.session_id]);
    expect(runs[0]).toMatchObject({
      kind: 'fix',
      verdict: 'failed',
      code: 'VERIFICATION_FAILED',
      attempts: 1,
      branch: failed.branch,
    });
    // an unverified attempt keeps its worktree to look at; a verified fix keeps only its branch
    expect(runs[0]?.worktree).toBeTruthy();
    expect(existsSync(runs[0]?.worktree ?? '')).toBe(true);
    expect(runs[1]).toMatchObject({
      verdict: 'verified',
      code: 'COMPLETED',
      branch: verified.branch,
      worktree: null,
    });
    // the run's cost is its sessions' together, as the fix reported it
    expect(runs[1]?.cost_usd).toBeGreaterThan(0);
    expect(runs[1]?.cost_usd).toBe(verified.cost_usd);

    const text = await keel(['runs', 'list'], { cwd: home, home });
    ok(text);
    expect(text.stdout.split('\n')[1]).toContain(failed.session_id);
    expect(text.stdout).toContain(`branch ${verified.branch}`);

    // a prefix of the id is enough (all but its last character: runs started in the same second share
    // the time part, and one more hex digit was shared by two of them once)
    const show = await keel(['runs', 'show', verified.session_id.slice(0, -1)], { cwd: home, home });
    ok(show);
    expect(show.stdout).toContain(`run ${verified.session_id} · fix · verified`);
    expect(show.stdout).toContain('── rationale ──');
    expect(show.stdout).toContain('── pr description ──');
    expect(show.stdout).toContain('+  return sum(values) / values.length;');
    expect(show.stdout).toMatch(/^trace: +\S+trace\.jsonl$/m);
    const missing = await keel(['runs', 'show', 'nope', '--json'], { cwd: home, home });
    expect(missing.code).toBe(2);
    expect(JSON.parse(missing.stdout)).toMatchObject({ code: 'CONFIG_ERROR', exit_code: 2 });
  });

  it("prune removes the runs' keel/fix-* branches, worktrees and run folders, never the user's, and says so", async () => {
    const repo = fixtureRepo('stats');
    const home = keelHome();
    const verified = await fixRun(repo, home, [...PLAN, ...RIGHT_FIX], 'mean is wrong');
    const failed = await fixRun(repo, home, [...PLAN, ...IRRELEVANT], 'mean is still wrong');
    // the user's own branches, one of them named like keel's
    git(repo, 'branch', 'feature');
    git(repo, 'branch', 'keel/fix-mine');
    const before = await runsList(home);

    const vague = await keel(['runs', 'prune'], { cwd: home, home });
    expect(vague.code).toBe(2);
    expect(vague.stderr).toContain('--older-than DAYS, or --all');
    const young = await keel(['runs', 'prune', '--older-than', '1', '-y'], { cwd: home, home });
    ok(young);
    expect(young.stderr).toContain('no run has anything left to prune');
    // without a terminal and without --yes: the plan, and nothing removed
    const dry = await keel(['runs', 'prune', '--all'], { cwd: home, home });
    expect(dry.code).toBe(1);
    expect(dry.stdout).toContain(`branch ${verified.branch} in ${repo}`);
    expect(leftovers(repo).branches).toHaveLength(3);

    const prune = await keel(['runs', 'prune', '--all', '-y'], { cwd: home, home });
    ok(prune);
    expect(prune.stdout).toContain(`branch ${failed.branch} in ${repo}`);
    expect(prune.stdout).toContain(`worktree ${before[0]?.worktree}`);
    expect(prune.stdout).toContain(`run folder ${before[1]?.run_dir}`);
    expect(leftovers(repo)).toEqual({ branches: ['keel/fix-mine'], worktrees: 0 });
    expect(git(repo, 'branch', '--list', 'feature').trim()).toBe('feature');
    for (const r of before) {
      expect(existsSync(r.run_dir ?? '')).toBe(false);
      if (r.worktree) expect(existsSync(r.worktree)).toBe(false);
    }
    expect(await runsList(home)).toEqual([]);
    const all = await runsList(home, '--all');
    expect(all.map((r) => [r.pruned, r.branch, r.worktree, r.run_dir])).toEqual([
      [true, null, null, null],
      [true, null, null, null],
    ]);
    // what went is in the audit chain, and the chain still verifies
    const tail = JSON.parse(
      (await keel(['audit', 'tail', '-n', '500', '--json'], { cwd: home, home })).stdout,
    ).lines as Array<{ type: string; session_id: string; removed?: string[] }>;
    const pruned = tail.filter((l) => l.type === 'run_pruned');
    expect(pruned.map((l) => l.session_id).sort()).toEqual([failed.session_id, verified.session_id].sort());
    expect((await keel(['audit', 'verify'], { cwd: home, home })).code).toBe(0);
  });

  it("keel fix --clean prunes this repository's runs only", async () => {
    const mine = fixtureRepo('stats');
    const other = fixtureRepo('stats');
    const home = keelHome();
    const a = await fixRun(mine, home, [...PLAN, ...IRRELEVANT], 'mean is wrong');
    const b = await fixRun(other, home, [...PLAN, ...IRRELEVANT], 'mean is wrong');

    const clean = await keel(['fix', '--clean', '-y', '--repo', mine], { cwd: home, home });
    ok(clean);
    expect(clean.stdout).toContain(`branch ${a.branch} in ${mine}`);
    expect(leftovers(mine)).toEqual({ branches: [], worktrees: 0 });
    expect(leftovers(other)).toEqual({ branches: [b.branch], worktrees: 1 });
    const again = await keel(['fix', '--clean', '-y'], { cwd: mine, home });
    ok(again);
    expect(again.stderr).toContain('has anything left to clean');
  });

  it('sessions list shows a fix run with its plan and attempt counted, not listed; --all lists them', async () => {
    const repo = fixtureRepo('stats');
    const home = keelHome();
    const run = await fixRun(repo, home, [...PLAN, ...RIGHT_FIX], 'mean is wrong');

    const top = JSON.parse((await keel(['sessions', 'list', '--json'], { cwd: home, home })).stdout)
      .sessions as Array<{
      id: string;
      mode: string;
      children?: number;
    }>;
    expect(top.map((s) => [s.id, s.mode, s.children])).toEqual([[run.session_id, 'fix', 2]]);
    const text = await keel(['sessions', 'list'], { cwd: home, home });
    // a header, then one line: its age and its project's folder name beside the id
    const [header, line, ...rest] = text.stdout.trim().split('\n');
    expect(rest).toEqual([]);
    expect(header).toMatch(/^SESSION\s+AGE\s+PROJECT\s+MODE\s+STATE\s+COST\s+TASK$/);
    expect(line).toMatch(new RegExp(`^${run.session_id}\\s+\\d+[smhd]\\s+${basename(repo)}\\s+fix\\s`));
    expect(line).toContain('(+2 sessions)');
    expect(
      JSON.parse((await keel(['sessions', 'list', '--json'], { cwd: home, home })).stdout).sessions[0],
    ).toMatchObject({
      id: run.session_id,
      session_id: run.session_id,
    });

    const all = JSON.parse((await keel(['sessions', 'list', '--all', '--json'], { cwd: home, home })).stdout)
      .sessions as Array<{ mode: string; parent_id: string | null }>;
    expect(all.map((s) => s.mode).sort()).toEqual(['edit', 'fix', 'plan']);
    expect(all.filter((s) => s.parent_id === run.session_id)).toHaveLength(2);
  });
});
