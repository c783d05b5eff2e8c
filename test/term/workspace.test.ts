import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { userPath } from '../../src/term/workspace.js';

describe('userPath', () => {
  it('turns a path typed in a subfolder into the root-relative path the model uses', () => {
    const root = '/work/repo';
    const here = join(root, 'src', 'lib');
    expect(userPath(root, 'a.ts', here)).toBe('src/lib/a.ts');
    expect(userPath(root, '../index.ts', here)).toBe('src/index.ts');
    expect(userPath(root, '/work/repo/README.md', here)).toBe('README.md');
    expect(userPath(root, '../..', here)).toBe('.');
  });

  it('refuses a path outside the workspace', () => {
    expect(userPath('/work/repo', '../../../etc/passwd', '/work/repo/src')).toBeUndefined();
    expect(userPath('/work/repo', '/work/repo-other/x', '/work/repo')).toBeUndefined();
  });
});
