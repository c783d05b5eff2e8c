/** narrow(): a child's policy is never wider than its parent's, whatever it asks for. */
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema, MODES } from '../../src/config/schema.js';
import { isWithin, narrow, type Policy, policyFor } from '../../src/policy/policy.js';
import { Scope } from '../../src/policy/scope.js';
import { tempDir } from '../helpers/tmp.js';

function parentPolicy(over: Record<string, unknown> = {}, mode: Policy['mode'] = 'edit'): Policy {
  const root = tempDir();
  mkdirSync(join(root, 'src/deep'), { recursive: true });
  mkdirSync(join(root, 'docs'), { recursive: true });
  symlinkSync('..', join(root, 'src', 'up'));
  const config = configSchema.parse({
    scope: ['src'],
    budgets: { max_tokens: 1000, max_rounds: 10 },
    ...over,
  });
  return policyFor({ mode, scope: new Scope({ root, writable: config.scope }), config, sandbox: true });
}

describe('narrow', () => {
  it('keeps what the parent has when the child asks for nothing, one level deeper', () => {
    const parent = parentPolicy();
    const child = narrow(parent, {});
    expect(child.ok).toBe(true);
    if (!child.ok) return;
    expect(child.policy).toMatchObject({ mode: 'edit', network: false, depth: 1, sandbox: true });
    expect(child.policy.scope.writable).toEqual(parent.scope.writable);
    expect(child.policy.hooks).toEqual(parent.hooks);
    expect(isWithin(child.policy, parent)).toBe(true);
    expect(Object.isFrozen(child.policy)).toBe(true);
  });

  it('refuses a wider mode, scope, network or budget, and nesting past max_depth', () => {
    const parent = parentPolicy({ agents: { max_depth: 1 } }, 'edit');
    expect(narrow(parent, { mode: 'auto' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('mode auto'),
    });
    expect(narrow(parentPolicy({}, 'ask'), { mode: 'edit' })).toMatchObject({ ok: false });
    expect(narrow(parent, { scope: ['.'] })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('outside'),
    });
    expect(narrow(parent, { scope: ['docs'] })).toMatchObject({ ok: false });
    // a link inside the parent's scope pointing out of it is compared by where it leads
    expect(narrow(parent, { scope: ['src/up'] })).toMatchObject({ ok: false });
    expect(narrow(parent, { scope: ['src/../docs'] })).toMatchObject({ ok: false });
    expect(narrow(parent, { network: true })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('network'),
    });
    expect(narrow(parent, { budgets: { max_tokens: 5000 } })).toMatchObject({ ok: false });
    const child = narrow(parent, { scope: ['src/deep'], mode: 'ask', budgets: { max_tokens: 10 } });
    expect(child.ok).toBe(true);
    if (!child.ok) return;
    expect(narrow(child.policy, {})).toMatchObject({
      ok: false,
      reason: expect.stringContaining('nest 1 deep'),
    });
  });

  it('whatever a child asks for, the result is within its parent or refused (random requests)', () => {
    const parent = parentPolicy({ agents: { max_depth: 5 } });
    const scopes = ['src', 'src/deep', '.', 'docs', 'src/up', 'src/../src/deep', 'src/new-dir', '/tmp'];
    let seed = 7;
    const pick = <T>(xs: readonly T[]): T => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return xs[(seed >>> 16) % xs.length] as T;
    };
    let granted = 0;
    for (let i = 0; i < 300; i++) {
      const request = {
        ...(pick([true, false]) ? { mode: pick(MODES) } : {}),
        ...(pick([true, false])
          ? { scope: [pick(scopes), ...(pick([true, false]) ? [pick(scopes)] : [])] }
          : {}),
        ...(pick([true, false]) ? { network: pick([true, false]) } : {}),
        ...(pick([true, false]) ? { budgets: { max_tokens: pick([1, 999, 1000, 1001, 50_000]) } } : {}),
      };
      const result = narrow(parent, request);
      if (!result.ok) continue;
      granted++;
      expect(isWithin(result.policy, parent), JSON.stringify(request)).toBe(true);
      // and a grandchild of it is within both
      const grand = narrow(result.policy, request);
      if (grand.ok) expect(isWithin(grand.policy, parent)).toBe(true);
    }
    expect(granted).toBeGreaterThan(20);
  });
});
