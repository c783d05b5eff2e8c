/** The strict reply format a hub reviewer of `keel build` answers in, and the reviewer list's checks. */
import { describe, expect, it } from 'vitest';
import { parseVerdict, reviewerList } from '../../src/cli/build-review.js';

describe('keel build reviewers', () => {
  it('only a first line of exactly APPROVE approves; REJECT: gives a reason; anything else is no verdict', () => {
    expect(parseVerdict('APPROVE')).toEqual({ verdict: 'approve' });
    expect(parseVerdict('APPROVE\nwith a nit')).toEqual({ verdict: 'approve' });
    expect(parseVerdict('REJECT: the test checks nothing')).toEqual({
      verdict: 'reject',
      reason: 'the test checks nothing',
    });
    for (const body of [
      'approve',
      'APPROVED',
      'I APPROVE',
      'LGTM\nAPPROVE',
      '',
      'APPROVE: rev-b too',
      'REJECT',
    ])
      expect(parseVerdict(body).verdict, body).toBe('invalid');
  });

  it('each reviewer counts once, keel build is not its own reviewer, and the minimum fits the list', () => {
    expect(reviewerList('rev-a, rev-b', 2, 'builder')).toEqual({ reviewers: ['rev-a', 'rev-b'], min: 2 });
    expect(reviewerList('rev-a,rev-b', undefined, 'builder')).toEqual({
      reviewers: ['rev-a', 'rev-b'],
      min: 2,
    });
    expect(reviewerList('rev-a,rev-a', 2, 'builder')).toMatch(/twice/);
    expect(reviewerList('rev-a,builder', 1, 'builder')).toMatch(/keel build itself/);
    expect(reviewerList('rev-a,rev-b', 3, 'builder')).toMatch(/--min-approvals 3/);
    expect(reviewerList('rev-a', 0, 'builder')).toMatch(/--min-approvals 0/);
    expect(reviewerList(' , ', 1, 'builder')).toMatch(/no reviewer/);
  });
});
