import { describe, expect, it } from 'vitest';
import { passAtK } from '../../src/eval/pass-at-k.js';
import { selfCheckProblems } from '../../src/eval/run.js';

describe('pass@k', () => {
  it('is the unbiased estimate 1 - C(n-c, k) / C(n, k)', () => {
    expect(passAtK(10, 3, 1)).toBeCloseTo(0.3);
    expect(passAtK(10, 3, 5)).toBeCloseTo(1 - 21 / 252);
    expect(passAtK(4, 0, 4)).toBe(0);
    expect(passAtK(4, 1, 4)).toBe(1);
    expect(() => passAtK(2, 1, 3)).toThrow(/k <= n/);
  });
});

describe('the self-check', () => {
  const ok = { status: 'verified' as const, code: 'COMPLETED', reason: 'verified: 1 target passes' };
  const refused = { status: 'failed' as const, code: 'VERIFICATION_FAILED', reason: 'not verified: t fails' };
  it('passes only when the honest patch verifies, the cheat is refused by the verifier, and verdicts repeat', () => {
    expect(selfCheckProblems([ok, ok], [refused, refused])).toEqual([]);
    expect(selfCheckProblems([ok, ok], [refused, ok])).toEqual([
      'the cheating patch was verified',
      "the cheating patch's verdicts differ between runs",
    ]);
    // a cheat that never reached the verifier (it did not apply) proves nothing
    const notApplied = {
      status: 'failed' as const,
      code: 'CONFIG_ERROR',
      reason: 'the patch does not apply',
    };
    expect(selfCheckProblems([ok, ok], [notApplied, notApplied])).toEqual([
      'the cheating patch was not judged by the verifier (CONFIG_ERROR: the patch does not apply)',
    ]);
    const other = { ...refused, reason: 'not verified: u fails' };
    expect(selfCheckProblems([ok, ok], [refused, other])).toEqual([
      "the cheating patch's verdicts differ between runs",
    ]);
  });
});
