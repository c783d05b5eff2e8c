/** `keel fix` end to end: attempts, verification and what a fix leaves behind (JS fixtures, node --test). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { git } from '../helpers/tmp.js';
import {
  branchCommits,
  dirtyCheckout,
  editTurns,
  fix,
  fixtureRepo,
  planTurns,
  reportFilesExist,
} from './fix-harness.js';
import { chatBodies, keel, model, requestMessages } from './harness.js';

const TARGET = 'test/stats.test.js > mean of 2, 4, 6 is 4';
const EMPTY_MEAN = 'test/stats.test.js > mean of an empty list is 0';
const BUGGY_DIVISOR = '  return sum(values) / (values.length + 1);';
const PLAN = planTurns('src/stats.js', '1. mean divides by one too many.\n2. Divide by values.length.');
const RIGHT_FIX = editTurns(
  'src/stats.js',
  BUGGY_DIVISOR,
  '  return sum(values) / values.length;',
  'mean divided by length + 1; it now divides by the length.',
);

describe('keel fix: a verified fix', () => {
  it('the right fix exits 0: verified, a commit on a keel/fix-* branch, and the run files', async () => {
    const repo = fixtureRepo('stats');
    dirtyCheckout(repo, 'src/stats.js');
    const server = await model([...PLAN, ...RIGHT_FIX]);
    const { run, doc, home } = await fix(repo, server, ['--issue', 'mean() of [2, 4, 6] returns 3, not 4']);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ mode: 'fix', code: 'COMPLETED', status: 'verified', attempts: 1 });
    // the verdict is in the audit chain with the run's id, next to its sessions' lines
    const audit = JSON.parse(
      (await keel(['audit', 'tail', '-n', '500', '--json'], { cwd: repo, home })).stdout,
    ).lines as Array<{ type: string; session_id: string; status?: string }>;
    const runLines = audit.filter((l) => l.session_id === doc.session_id).map((l) => [l.type, l.status]);
    expect(runLines).toEqual(
      expect.arrayContaining([
        ['run_start', undefined],
        ['fix_verdict', 'verified'],
        ['fix_end', 'verified'],
      ]),
    );
    expect((await keel(['audit', 'verify'], { cwd: repo, home })).code).toBe(0);
    expect(doc.files_changed).toEqual(['src/stats.js']);
    expect(doc.verification).toMatchObject({
      status: 'verified',
      mode: 'per-test',
      targetsPassing: [TARGET],
      regressions: [],
    });
    expect(doc.branch).toMatch(/^keel\/fix-mean-of-2-4-6-returns-3-not-4-/);
    // the commit is on the branch in the user's repository, and holds the fix (not the user's edit)
    const branch = doc.branch ?? '';
    expect(branchCommits(repo, branch)).toEqual([doc.commit]);
    const fixed = git(repo, 'show', `${branch}:src/stats.js`);
    expect(fixed).toContain('return sum(values) / values.length;');
    expect(fixed).not.toContain('work in progress');
    expect(git(repo, 'show', '--name-only', '--format=', branch).trim()).toBe('src/stats.js');

    expect(reportFilesExist(doc)).toBe(true);
    // the verdict is kept in the project's memory for the next session, written by keel, not the model
    const memory = JSON.parse((await keel(['memory', 'list', '--json'], { cwd: repo, home })).stdout) as {
      items: Array<{ kind: string; text: string; author: string; session_id: string; tags: string[] }>;
    };
    const verdicts = memory.items.filter((i) => i.kind === 'fix_verdict');
    expect(verdicts).toHaveLength(1);
    expect(verdicts[0]).toMatchObject({
      author: 'keel',
      session_id: doc.session_id,
      tags: ['fix', 'verified'],
    });
    expect(verdicts[0]?.text).toMatch(
      /^Fix verified after 1 attempt: ".*" \(task: mean\(\) of \[2, 4, 6\] returns 3, not 4\); files: "src\/stats\.js"$/,
    );
    expect(readFileSync(doc.diff ?? '', 'utf8')).toContain('+  return sum(values) / values.length;');
    expect(readFileSync(doc.rationale ?? '', 'utf8')).toContain('VERIFIED');
    expect(readFileSync(doc.rationale ?? '', 'utf8')).toContain(TARGET);
    expect(readFileSync(doc.pr_description ?? '', 'utf8')).toContain(branch);
    const trace = readFileSync(doc.trace ?? '', 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { session_id: string; type: string; data: Record<string, unknown> });
    const types = trace.map((e) => e.type);
    for (const type of ['fix_snapshot', 'fix_baseline', 'fix_plan', 'fix_attempt', 'fix_verdict'])
      expect(types).toContain(type);
    const modes = trace.filter((e) => e.type === 'session_start').map((e) => e.data.mode);
    expect(modes).toEqual(['plan', 'edit']);
    expect(trace.at(-1)).toMatchObject({ type: 'fix_end', data: { status: 'verified' } });
    expect(trace.some((e) => e.type === 'tool_start' && e.data.tool === 'edit_file')).toBe(true);
  });

  it('a wrong fix then the right one: the verifier output of attempt 1 is fed to attempt 2', async () => {
    const repo = fixtureRepo('stats');
    const server = await model([
      ...PLAN,
      ...editTurns('src/stats.js', BUGGY_DIVISOR, '  return sum(values) / (values.length - 1);', 'Fixed!'),
      ...RIGHT_FIX,
    ]);
    // the issue as words, as people type it: `keel fix "mean is wrong"`
    const { run, doc } = await fix(repo, server, ['mean is wrong']);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified', attempts: 2, files_changed: ['src/stats.js'] });
    expect(JSON.stringify(requestMessages(chatBodies(server)[0]))).toContain('mean is wrong');
    expect(branchCommits(repo, doc.branch ?? '')).toHaveLength(1);
    expect(git(repo, 'show', `${doc.branch}:src/stats.js`)).toContain('/ values.length;');
    // requests: plan (2), attempt 1 (2), attempt 2 (2); attempt 2 opens with attempt 1's verdict
    const bodies = chatBodies(server);
    expect(bodies).toHaveLength(6);
    const prompt = requestMessages(bodies[4]).findLast((m) => m.role === 'user')?.content ?? '';
    expect(prompt).toContain('did not pass verification');
    expect(prompt).toContain(TARGET);
    expect(prompt).toContain('6 !== 4');
    const first = requestMessages(bodies[2]).findLast((m) => m.role === 'user')?.content ?? '';
    expect(first).not.toContain('did not pass verification');
  });
});

describe('keel fix: the model does not decide what is verified', () => {
  it('a model that claims success while the target still fails exits 1, VERIFICATION_FAILED', async () => {
    const repo = fixtureRepo('stats');
    dirtyCheckout(repo, 'README.md');
    const irrelevant = () =>
      editTurns('README.md', 'Small statistics helpers.', 'Small, well-tested statistics helpers.', 'Fixed!');
    const server = await model([...PLAN, ...irrelevant(), ...irrelevant()]);
    const { run, doc } = await fix(repo, server, ['--issue', 'mean is wrong', '--max-attempts', '2']);

    expect(run.code).toBe(1);
    expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed', attempts: 2 });
    expect(doc.verification?.targetsFailing).toEqual([TARGET]);
    expect(doc.summary).toContain('target still failing');
    expect(doc.summary).not.toContain('Fixed!');
    // the verdict is said once per attempt, never 'not verified: not verified:'
    expect(run.stderr).toContain('verdict: not verified: ');
    expect(run.stderr).not.toContain('not verified: not verified');
    // kept for inspection, labelled so nobody mistakes it for a fix
    expect(git(repo, 'log', '-1', '--format=%s', doc.branch ?? '')).toMatch(/^keel \(UNVERIFIED\)/);
    expect(readFileSync(doc.rationale ?? '', 'utf8')).toContain('NOT VERIFIED');
  });

  it('a fix that breaks another test exits 1 and names the regression', async () => {
    const repo = fixtureRepo('stats');
    const server = await model([
      ...PLAN,
      ...editTurns(
        'src/stats.js',
        `  if (values.length === 0) return 0;\n${BUGGY_DIVISOR}`,
        '  return sum(values) / values.length;',
        'Simplified mean; all good.',
      ),
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'mean is wrong', '--max-attempts', '1']);

    expect(run.code).toBe(1);
    expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed', attempts: 1 });
    expect(doc.verification).toMatchObject({
      targetsPassing: [TARGET],
      regressions: [EMPTY_MEAN],
      flaky: [],
    });
    expect(doc.summary).toContain(EMPTY_MEAN);
  });

  it('a test that fails once after the fix and passes on rerun is reported flaky, not a regression', async () => {
    const repo = fixtureRepo('flaky');
    const server = await model([
      ...planTurns('src/greet.js', '1. Add the exclamation mark.'),
      ...editTurns('src/greet.js', 'name}`;', 'name}!`;', 'Added the "!".'),
    ]);
    const { run, doc } = await fix(repo, server, ['--issue', 'greet() forgets the exclamation mark']);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified', attempts: 1, files_changed: ['src/greet.js'] });
    expect(doc.verification).toMatchObject({
      targetsPassing: ['test/greet.test.js > greet ends with an exclamation mark'],
      regressions: [],
      flaky: ['test/clock.test.js > clock sync is within tolerance'],
    });
    expect(doc.summary).toContain('flaky');
  });
});
