import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/store/audit.js';
import { tempDir } from '../helpers/tmp.js';

const BIN = fileURLToPath(new URL('../../bin/keel.js', import.meta.url));

function keel(home: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, KEEL_HOME: home, NO_COLOR: '1' },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A KEEL_HOME whose audit folder holds three lines written through the library. */
function home(): { home: string; dir: string; file: string } {
  const home = tempDir('keel-home-');
  const dir = join(home, 'audit');
  const log = new AuditLog(dir, { now: () => new Date('2026-03-01T10:00:00Z') });
  log.append({
    type: 'session_start',
    session_id: 's1',
    mode: 'edit',
    provider: 'openai',
    model: 'm',
    cwd: '/w',
  });
  log.append({
    type: 'tool_result',
    session_id: 's1',
    tool: 'write_file',
    is_error: false,
    files_changed: ['a.ts'],
  });
  log.append({ type: 'session_end', session_id: 's1', code: 'COMPLETED', rounds: 2 });
  log.close();
  return { home, dir, file: join(dir, '2026-03-01.jsonl') };
}

describe('keel audit', () => {
  it('verifies an intact chain, then names the line someone edited', () => {
    const { home: h, dir, file } = home();
    const ok = keel(h, 'audit', 'verify', dir);
    expect(ok.stderr).toBe('');
    const headHash = (JSON.parse(readFileSync(join(dir, 'head.json'), 'utf8')) as { hash: string }).hash;
    expect(ok.stdout).toBe(`audit chain intact: 3 lines\nhead ${headHash}\n`);
    expect(ok.status).toBe(0);
    // with no PATH it checks KEEL_HOME/audit; --json carries the head to anchor elsewhere
    expect(keel(h, 'audit', 'verify').stdout).toBe(`audit chain intact: 3 lines\nhead ${headHash}\n`);
    const doc = keel(h, 'audit', 'verify', '--json');
    expect(JSON.parse(doc.stdout)).toEqual({ path: dir, ok: true, lines: 3, head: headHash, unsealed: 0 });
    expect(keel(h, 'audit', 'verify', '--expect-head', headHash).status).toBe(0);

    const lines = readFileSync(file, 'utf8').split('\n');
    lines[1] = (lines[1] ?? '').replace('"a.ts"', '"b.ts"');
    writeFileSync(file, lines.join('\n'));
    const bad = keel(h, 'audit', 'verify', dir);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(`keel: audit chain broken at ${file} line 2: hash mismatch`);

    const json = keel(h, 'audit', 'verify', file, '--json');
    expect(json.status).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, file, line: 2 });
  });

  it('exits 2 for a path that does not exist', () => {
    const { home: h } = home();
    const r = keel(h, 'audit', 'verify', join(h, 'nope'));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no audit log at');
  });

  it('prints the newest lines, readably or as JSON', () => {
    const { home: h } = home();
    const text = keel(h, 'audit', 'tail', '-n', '2');
    expect(text.status).toBe(0);
    const shown = text.stdout.trimEnd().split('\n');
    expect(shown).toHaveLength(2);
    expect(shown[0]).toMatch(
      /^\s+2 2026-03-01T10:00:00.000Z tool_result\s+s1 tool=write_file is_error=false/,
    );
    expect(shown[1]).toContain('session_end');

    const json = keel(h, 'audit', 'tail', '-n', '5', '--json');
    expect(json.status).toBe(0);
    const doc = JSON.parse(json.stdout) as { lines: Array<{ seq: number; type: string }> };
    expect(doc.lines.map((l) => l.seq)).toEqual([1, 2, 3]);
  });
});
