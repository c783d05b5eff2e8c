import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { git, tempDir } from '../helpers/tmp.js';
import { keel, keelHome } from './harness.js';

describe('keel demo', () => {
  it('fixes the bundled project offline and proves it with its own tests', async () => {
    const home = keelHome();
    // the kept copy goes to a temporary folder of the test's own, removed after it
    const tmp = tempDir('keel-demo-tmp-');
    const run = await keel(['demo', '--json', '--keep'], {
      cwd: home,
      home,
      timeoutMs: 60_000,
      env: { TMPDIR: tmp },
    });
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout);
    expect(doc.kept).toBe(true);
    expect(doc).toMatchObject({
      mode: 'fix',
      code: 'COMPLETED',
      status: 'verified',
      attempts: 1,
      exit_code: 0,
    });
    expect(doc.files_changed).toEqual(['src/cart.js']);
    expect(doc.verification.regressions).toEqual([]);
    expect(doc.verification.targetsPassing).toHaveLength(2);
    // the fix is a real commit on the branch, and the demo's checkout still has the bug
    expect(git(doc.demo_repo, 'log', '--format=%s', '-1', doc.branch)).toContain('Discounts are wrong');
    expect(readFileSync(`${doc.demo_repo}/src/cart.js`, 'utf8')).toContain('return amount - percent;');
    for (const file of [doc.rationale, doc.pr_description, doc.diff, doc.trace])
      expect(existsSync(file)).toBe(true);
    expect(readFileSync(doc.rationale, 'utf8')).toContain('VERIFIED');
  });

  it('prints the verdict, the branch, the diff and where the rationale is, and leaves nothing in /tmp', async () => {
    const home = keelHome();
    const tmp = tempDir('keel-demo-tmp-');
    const run = await keel(['demo'], { cwd: home, home, timeoutMs: 60_000, env: { TMPDIR: tmp } });
    expect(run.code).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
    expect(run.stderr).toContain('removed the demo copy');
    expect(run.stdout).not.toMatch(/^repo: /m);
    expect(run.stdout).toMatch(/^VERIFIED: /m);
    expect(run.stdout).toMatch(/^branch: +keel\/fix-discounts-are-wrong/m);
    expect(run.stdout).toContain('+  return amount * (1 - percent / 100);');
    expect(run.stdout).toMatch(/^rationale: .*rationale\.md$/m);
    expect(run.stderr).toContain('attempt 1 of 2');
  });

  it('--keep keeps the demo copy and prints where it is', async () => {
    const home = keelHome();
    const tmp = tempDir('keel-demo-tmp-');
    const run = await keel(['demo', '--keep'], { cwd: home, home, timeoutMs: 60_000, env: { TMPDIR: tmp } });
    expect(run.code).toBe(0);
    const repo = /^repo: +(\S+)/m.exec(run.stdout)?.[1] ?? '';
    expect(repo.startsWith(tmp)).toBe(true);
    expect(existsSync(`${repo}/src/cart.js`)).toBe(true);
  });
});
