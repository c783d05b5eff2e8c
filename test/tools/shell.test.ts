import { describe, expect, it } from 'vitest';
import { formatResult, shellTool } from '../../src/tools/shell.js';
import { tempDir, testContext } from './context.js';

describe('shell', () => {
  it('reports the exit code and output; a failing command is an error result, not a throw', async () => {
    const root = tempDir();
    const ok = await shellTool.execute({ command: 'echo hello' }, testContext(root));
    expect(ok).toEqual({ output: 'exit code 0\nhello', isError: false, outcome: { exit_code: 0 } });
    const bad = await shellTool.execute({ command: 'echo out; echo oops >&2; exit 2' }, testContext(root));
    expect(bad).toEqual({
      output: 'exit code 2\n[stdout]\nout\n[stderr]\noops',
      isError: true,
      outcome: { exit_code: 2 },
    });
  });

  it('says when the command timed out', async () => {
    const root = tempDir();
    const res = await shellTool.execute({ command: 'sleep 5', timeout_s: 1 }, testContext(root));
    expect(res).toEqual({
      output: 'timed out after 1s; the process tree was killed (no output)',
      isError: true,
      outcome: { exit_code: null, timed_out: true },
    });
  });

  it('is unavailable without an exec policy', async () => {
    const root = tempDir();
    await expect(shellTool.execute({ command: 'ls' }, testContext(root, { exec: false }))).rejects.toThrow(
      'shell is not available in this session',
    );
  });

  it('cuts long output to head and tail with the omitted byte count', () => {
    const stdout = Array.from({ length: 5000 }, (_, i) => `l${i}`).join('\n');
    const out = formatResult(
      { exitCode: 0, signal: null, stdout, stderr: '', timedOut: false, truncated: false },
      120,
    );
    const lines = out.split('\n');
    expect(lines.slice(0, 2)).toEqual(['exit code 0', 'l0']);
    expect(lines.at(-1)).toBe('l4999');
    expect(out).toMatch(/\[\.\.\. \d+ bytes omitted \.\.\.\] \(3000 lines\)/);
  });
});
