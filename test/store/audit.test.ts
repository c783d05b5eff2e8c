import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/agent/events.js';
import { AuditLog, verifyChain } from '../../src/store/audit.js';
import { canonicalJson } from '../../src/store/audit-chain.js';
import { auditEntryFor } from '../../src/store/audit-entries.js';
import { forgeChain, otherKey, readChainLines } from '../helpers/audit-forge.js';
import { tempDir } from '../helpers/tmp.js';

/** A clock that starts at `iso` and moves one minute per call. */
function clock(iso: string): () => Date {
  let t = Date.parse(iso);
  return () => {
    const d = new Date(t);
    t += 60_000;
    return d;
  };
}

/** A fresh audit folder inside its own KEEL_HOME-like folder, so the key beside it is this test's own. */
const auditDir = () => join(tempDir('keel-audit-'), 'audit');

/** A folder with `n` lines on 2026-03-01 (UTC). */
function chain(n: number): { dir: string; file: string } {
  const dir = auditDir();
  const log = new AuditLog(dir, { now: clock('2026-03-01T10:00:00Z') });
  for (let i = 1; i <= n; i++) log.append({ type: 'tool_run', session_id: 's1', tool: 'read_file', i });
  log.close();
  return { dir, file: join(dir, '2026-03-01.jsonl') };
}

const readLines = (file: string) => readFileSync(file, 'utf8').trimEnd().split('\n');
const writeLines = (file: string, lines: string[]) => writeFileSync(file, `${lines.join('\n')}\n`);

describe('audit log', () => {
  it('appends hash-linked lines and a head, and a new writer continues the chain', () => {
    const { dir, file } = chain(3);
    const lines = readLines(file).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.seq)).toEqual([1, 2, 3]);
    expect(lines[0]?.prev).toBe('0'.repeat(64));
    expect(lines[1]?.prev).toBe(lines[0]?.hash);
    expect(lines[2]).toMatchObject({
      type: 'tool_run',
      session_id: 's1',
      i: 3,
      ts: '2026-03-01T10:02:00.000Z',
    });
    const head = JSON.parse(readFileSync(join(dir, 'head.json'), 'utf8'));
    expect(head).toEqual({
      count: 3,
      hash: lines[2]?.hash,
      file: '2026-03-01.jsonl',
      line: 3,
      mac: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(lines[2]?.mac).toMatch(/^[0-9a-f]{64}$/);

    const next = new AuditLog(dir, { now: () => new Date('2026-03-01T12:00:00Z') }).append({ type: 'x' });
    expect(next.seq).toBe(4);
    expect(next.prev).toBe(lines[2]?.hash);
    expect(verifyChain(dir)).toEqual({ ok: true, lines: 4, head: next.hash, unsealed: 0 });
  });

  it('refuses entries that set the fields the chain owns', () => {
    const log = new AuditLog(auditDir());
    expect(() => log.append({ type: 'x', seq: 7 })).toThrow(/may not set "seq"/);
    expect(() => log.append({ type: 'x', mac: 'f'.repeat(64) })).toThrow(/may not set "mac"/);
    expect(() => log.append({ type: '' })).toThrow(/needs a type/);
  });

  it('verifies an empty or missing chain as intact', () => {
    const dir = auditDir();
    mkdirSync(dir);
    expect(verifyChain(dir)).toEqual({ ok: true, lines: 0, head: '0'.repeat(64), unsealed: 0 });
  });

  it('names an edited line, and the next line when the editor also fixed the hash', () => {
    const { dir, file } = chain(5);
    const lines = readLines(file);
    writeLines(
      file,
      lines.map((l, i) => (i === 2 ? l.replace('"read_file"', '"write_file"') : l)),
    );
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      file,
      line: 3,
      problem: expect.stringMatching(/hash mismatch/),
    });

    // A forger who recomputes the edited line's own hash cannot recompute its seal without the key.
    const edited = JSON.parse(lines[2] ?? '') as Record<string, unknown>;
    edited.tool = 'write_file';
    const { hash: _old, mac: _mac, ...body } = edited;
    edited.hash = createHash('sha256').update(canonicalJson(body)).digest('hex');
    writeLines(
      file,
      lines.map((l, i) => (i === 2 ? JSON.stringify(edited) : l)),
    );
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      file,
      line: 3,
      problem: expect.stringMatching(/seal mismatch/),
    });
  });

  it('names the place of a deleted line', () => {
    const { dir, file } = chain(5);
    writeLines(
      file,
      readLines(file).filter((_, i) => i !== 1),
    );
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      file,
      line: 2,
      problem: expect.stringMatching(/seq 3 where 2/),
    });
  });

  it('names the first of two swapped lines', () => {
    const { dir, file } = chain(5);
    const lines = readLines(file);
    writeLines(file, [lines[0], lines[1], lines[3], lines[2], lines[4]] as string[]);
    expect(verifyChain(dir)).toMatchObject({ ok: false, file, line: 3 });
  });

  it('catches a cut tail through head.json, in the folder and in the newest day file alone', () => {
    const { dir, file } = chain(5);
    writeLines(file, readLines(file).slice(0, 3));
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      file,
      line: 4,
      problem: expect.stringMatching(/ends at seq 3 but head.json records 5/),
    });
    expect(verifyChain(file)).toMatchObject({
      ok: false,
      file,
      line: 4,
      problem: expect.stringMatching(/tail was cut/),
    });
    // The next append links to the head, not to the cut tail, so the evidence survives it.
    new AuditLog(dir, { now: () => new Date('2026-03-01T12:00:00Z') }).append({ type: 'x' });
    expect(verifyChain(dir)).toMatchObject({ ok: false, file, line: 4 });
  });

  it('names a line that is not JSON', () => {
    const { dir, file } = chain(3);
    const lines = readLines(file);
    writeLines(file, [lines[0], '{"seq": 2, oops', lines[2]] as string[]);
    expect(verifyChain(dir)).toEqual({ ok: false, file, line: 2, problem: 'invalid JSON' });
    expect(verifyChain(file)).toMatchObject({ ok: false, line: 2 });
  });

  it('continues the chain across UTC days', () => {
    const dir = auditDir();
    const log = new AuditLog(dir, { now: clock('2026-03-01T23:58:00Z') });
    for (let i = 0; i < 4; i++) log.append({ type: 'tick', i });
    expect(readdirSync(dir).filter((f) => f.endsWith('.jsonl'))).toEqual([
      '2026-03-01.jsonl',
      '2026-03-02.jsonl',
    ]);
    const day1 = readLines(join(dir, '2026-03-01.jsonl')).map((l) => JSON.parse(l));
    const day2 = readLines(join(dir, '2026-03-02.jsonl')).map((l) => JSON.parse(l));
    expect(day1).toHaveLength(2);
    expect(day2[0].seq).toBe(3);
    expect(day2[0].prev).toBe(day1[1].hash);
    expect(verifyChain(dir)).toMatchObject({ ok: true, lines: 4 });
    expect(JSON.parse(readFileSync(join(dir, 'head.json'), 'utf8'))).toMatchObject({
      file: '2026-03-02.jsonl',
      line: 2,
    });
    // one day's file on its own verifies from its first line
    expect(verifyChain(join(dir, '2026-03-02.jsonl'))).toMatchObject({ ok: true, lines: 2 });

    unlinkSync(join(dir, '2026-03-01.jsonl'));
    expect(verifyChain(dir)).toMatchObject({ ok: false, file: join(dir, '2026-03-02.jsonl'), line: 1 });
  });

  it('keeps a line whose head write a crash interrupted, and drops a torn half-line', () => {
    const { dir, file } = chain(3);
    const headBefore = readFileSync(join(dir, 'head.json'), 'utf8');
    const log = new AuditLog(dir, { now: () => new Date('2026-03-01T12:00:00Z') });
    log.append({ type: 'x' });
    writeFileSync(join(dir, 'head.json'), headBefore); // as if the process died before the head rename
    expect(verifyChain(dir)).toMatchObject({ ok: true, lines: 4 });
    appendFileSync(file, '{"seq":5,"ts":"2026-03'); // as if it died mid-write
    expect(log.append({ type: 'y' }).seq).toBe(5);
    expect(readLines(file)).toHaveLength(5);
    expect(verifyChain(dir)).toMatchObject({ ok: true, lines: 5 });
  });

  it('a writer that remembers its tail still continues after other writers, in its file and in a newer one', () => {
    const dir = auditDir();
    const a = new AuditLog(dir, { now: () => new Date('2026-03-01T10:00:00Z') });
    a.append({ type: 'a1' });
    a.append({ type: 'a2' });
    new AuditLog(dir, { now: () => new Date('2026-03-01T10:05:00Z') }).append({ type: 'b1' });
    expect(a.append({ type: 'a3' })).toMatchObject({ seq: 4 });
    // another writer starts the next day's file: a's file is unchanged, only head.json tells
    new AuditLog(dir, { now: () => new Date('2026-03-02T00:01:00Z') }).append({ type: 'c1' });
    expect(a.append({ type: 'a4' })).toMatchObject({ seq: 6 });
    expect(readLines(join(dir, '2026-03-02.jsonl'))).toHaveLength(2);
    expect(verifyChain(dir)).toMatchObject({ ok: true, lines: 6 });
  });

  it('links to the first line of a new day file whose writer died before the head', () => {
    const dir = auditDir();
    const a = new AuditLog(dir, { now: () => new Date('2026-03-01T23:59:00Z') });
    a.append({ type: 'a1' });
    // b's clock is past midnight; b dies after its line is on disk and before its head write. Rebuild
    // exactly what that crash leaves: b's line, a's head.json, and the new-day marker b had made.
    const head = join(dir, 'head.json');
    const aHead = readFileSync(head);
    const b = new AuditLog(dir, { now: () => new Date('2026-03-02T00:00:01Z') });
    b.append({ type: 'b1' });
    writeFileSync(head, aHead);
    writeFileSync(join(dir, '.new-day-file'), '');
    expect(readLines(join(dir, '2026-03-02.jsonl'))).toHaveLength(1);
    // a's file and head.json are as a left them, yet a must not write a second seq 2
    expect(a.append({ type: 'a2' })).toMatchObject({ seq: 3 });
    expect(verifyChain(dir)).toMatchObject({ ok: true, lines: 3 });
    expect(readdirSync(dir).filter((f) => !f.endsWith('.jsonl'))).toEqual(['.lock', 'head.json']);
  });

  it('reports a deleted or unreadable head', () => {
    const { dir } = chain(3);
    writeFileSync(join(dir, 'head.json'), '{');
    expect(verifyChain(dir)).toMatchObject({ ok: false, file: join(dir, 'head.json'), line: 1 });
    expect(() => new AuditLog(dir).append({ type: 'x' })).toThrow(/head is unreadable/);
    unlinkSync(join(dir, 'head.json'));
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/head.json is missing/),
    });
    expect(() => new AuditLog(dir).append({ type: 'x' })).toThrow(/head.json is missing/);
  });

  it('never forks when several processes append at once', async () => {
    const dist = fileURLToPath(new URL('../../dist/store/audit.js', import.meta.url));
    if (!existsSync(dist))
      throw new Error('dist/store/audit.js is missing: run `npm run build` (npm test does)');
    const dir = join(tempDir('keel-audit-mp-'), 'audit');
    const runner = join(tempDir(), 'append.mjs');
    writeFileSync(
      runner,
      `import { AuditLog } from ${JSON.stringify(pathToFileURL(dist).href)};
const [dir, who, startAt] = process.argv.slice(2);
// start together so the appends really interleave
while (Date.now() < Number(startAt)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
const log = new AuditLog(dir);
for (let i = 0; i < 50; i++) log.append({ type: 'tool_run', session_id: who, i });
`,
    );
    const startAt = String(Date.now() + 1000);
    const codes = await Promise.all(
      ['a', 'b', 'c', 'd'].map(
        (who) =>
          new Promise<number | null>((resolve) => {
            const child = spawn(process.execPath, [runner, dir, who, startAt], {
              stdio: ['ignore', 'inherit', 'inherit'],
            });
            child.on('exit', resolve);
          }),
      ),
    );
    expect(codes).toEqual([0, 0, 0, 0]);
    expect(verifyChain(dir)).toMatchObject({ ok: true, lines: 200 });
    const lines = readdirSync(dir)
      .filter((f) => f.endsWith('.jsonl'))
      .flatMap((f) => readLines(join(dir, f)).map((l) => JSON.parse(l)));
    for (const who of ['a', 'b', 'c', 'd']) {
      expect(lines.filter((l) => l.session_id === who).map((l) => l.i)).toEqual([...Array(50).keys()]);
    }
    expect(JSON.parse(readFileSync(join(dir, 'head.json'), 'utf8')).count).toBe(200);
    // they all started with no key: exactly one was made, whole, and every line is sealed with it
    expect(readdirSync(join(dir, '..')).sort()).toEqual(['audit', 'audit.key']);
    expect(statSync(join(dir, '..', 'audit.key')).mode & 0o777).toBe(0o600);
    expect(lines.every((l) => typeof l.mac === 'string')).toBe(true);
  });
});

describe('audit key', () => {
  const keyOf = (dir: string) =>
    Buffer.from(readFileSync(join(dir, '..', 'audit.key'), 'utf8').trim(), 'hex');

  it('is created at first use beside the folder, not in it, readable by its owner only', () => {
    const { dir } = chain(1);
    const key = join(dir, '..', 'audit.key');
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(readFileSync(key, 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
    expect(readdirSync(dir).some((f) => f.includes('key'))).toBe(false);
    expect(readdirSync(join(dir, '..'))).toEqual(['audit', 'audit.key']);
  });

  it("a forger who re-chains every line with a new head is caught; with keel's key the same forgery passes", () => {
    const { dir, file } = chain(4);
    const lines = readChainLines(file);
    const forged = lines.filter((_, i) => i !== 1).map((l) => ({ ...l, tool: 'nothing_to_see' }));
    forgeChain(dir, '2026-03-01.jsonl', forged, otherKey());
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      line: 1,
      problem: expect.stringMatching(/seal mismatch/),
    });
    expect(verifyChain(file)).toMatchObject({ ok: false, line: 1 });
    forgeChain(dir, '2026-03-01.jsonl', forged, 'unsealed');
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/no line is sealed/),
    });
    expect(() => new AuditLog(dir).append({ type: 'x' })).toThrow(/head.json is not sealed/);
    // the forgery itself is well formed: only the key stands in its way
    forgeChain(dir, '2026-03-01.jsonl', forged, keyOf(dir));
    expect(verifyChain(dir)).toMatchObject({ ok: true, lines: 3 });
  });

  it('a chain cut to one line with head.json deleted is tampering, and is not extended', () => {
    const { dir, file } = chain(4);
    writeLines(file, readLines(file).slice(0, 1));
    unlinkSync(join(dir, 'head.json'));
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/head.json is missing/),
    });
    expect(verifyChain(file)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/head.json is missing/),
    });
    expect(() => new AuditLog(dir).append({ type: 'x' })).toThrow(/head.json is missing/);
  });

  it('a lone day file is checked against the head only when it is the newest', () => {
    const dir = auditDir();
    const log = new AuditLog(dir, { now: clock('2026-03-01T23:58:00Z') });
    for (let i = 0; i < 4; i++) log.append({ type: 'tick', i });
    const day2 = join(dir, '2026-03-02.jsonl');
    writeLines(day2, readLines(day2).slice(0, 1));
    expect(verifyChain(day2)).toMatchObject({ ok: false, problem: expect.stringMatching(/tail was cut/) });
    expect(verifyChain(join(dir, '2026-03-01.jsonl'))).toMatchObject({ ok: true, lines: 2 });
    // deleting the newest day outright leaves head.json pointing into a file that is gone
    unlinkSync(day2);
    expect(verifyChain(join(dir, '2026-03-01.jsonl'))).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/tail was cut/),
    });
  });

  it('verifying with another key, or with none, fails', () => {
    const { dir } = chain(2);
    const elsewhere = join(tempDir(), 'other.key');
    writeFileSync(elsewhere, `${otherKey().toString('hex')}\n`);
    expect(verifyChain(dir, { keyPath: elsewhere })).toMatchObject({
      ok: false,
      line: 1,
      problem: expect.stringMatching(/sealed with another key/),
    });
    expect(verifyChain(dir, { keyPath: join(tempDir(), 'none.key') })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/no audit key/),
    });
    writeFileSync(elsewhere, 'not a key');
    expect(verifyChain(dir, { keyPath: elsewhere })).toMatchObject({ ok: false, file: elsewhere });
  });

  it('an anchored head passes while the chain still holds it', () => {
    const { dir } = chain(2);
    const r = verifyChain(dir);
    if (!r.ok) throw new Error('chain should verify');
    new AuditLog(dir).append({ type: 'later' });
    expect(verifyChain(dir, { expectHead: r.head })).toMatchObject({ ok: true, lines: 3 });
    expect(verifyChain(dir, { expectHead: 'f'.repeat(64) })).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/expected hash/),
    });
  });

  it('continues a chain from keel before keys, sealing it from there; a cut back to the old part is refused', () => {
    const dir = auditDir();
    mkdirSync(dir);
    const old = Array.from({ length: 3 }, (_, i) => ({ type: 'old', ts: '2026-02-01T00:00:00.000Z', i }));
    forgeChain(dir, '2026-02-01.jsonl', old, 'unsealed');
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/no line is sealed/),
    });
    const log = new AuditLog(dir, { now: () => new Date('2026-03-01T10:00:00Z') });
    expect(log.append({ type: 'new' })).toMatchObject({ seq: 4, mac: expect.any(String) });
    expect(verifyChain(dir)).toMatchObject({ ok: true, lines: 4, unsealed: 3 });
    // editing an old line now breaks the link the first sealed line carries
    const oldFile = join(dir, '2026-02-01.jsonl');
    const lines = readChainLines(oldFile);
    const sealedHead = readFileSync(join(dir, 'head.json'));
    forgeChain(
      dir,
      '2026-02-01.jsonl',
      lines.map((l) => ({ ...l, i: 9 })),
      'unsealed',
    );
    writeFileSync(join(dir, 'head.json'), sealedHead);
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      file: join(dir, '2026-03-01.jsonl'),
      line: 1,
      problem: expect.stringMatching(/prev does not match/),
    });
    // the forger drops the sealed day and puts back an old-style head: keel will not continue that
    forgeChain(dir, '2026-02-01.jsonl', lines, 'unsealed');
    unlinkSync(join(dir, '2026-03-01.jsonl'));
    expect(() => new AuditLog(dir).append({ type: 'x' })).toThrow(/head.json is not sealed/);
    expect(verifyChain(dir)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/no line is sealed/),
    });
  });

  it('appends after an empty newest day file, with or without a head', () => {
    const dir = auditDir();
    mkdirSync(dir);
    writeFileSync(join(dir, '2026-03-01.jsonl'), '');
    const log = new AuditLog(dir, { now: () => new Date('2026-03-01T10:00:00Z') });
    expect(log.append({ type: 'a' }).seq).toBe(1);
    writeFileSync(join(dir, '2026-03-05.jsonl'), '');
    expect(new AuditLog(dir, { now: () => new Date('2026-03-01T11:00:00Z') }).append({ type: 'b' }).seq).toBe(
      2,
    );
    expect(verifyChain(dir)).toMatchObject({ ok: true, lines: 2 });
  });
});

describe('audit entries', () => {
  const sid = 's1';
  const entry = (event: SessionEvent) => auditEntryFor(event, sid);

  it('keeps metadata and drops contents, prompts and commands', () => {
    expect(
      entry({
        type: 'session_start',
        mode: 'edit',
        provider: 'openai',
        model: 'm',
        cwd: '/w',
        scope: ['/w'],
        instructions: ['SECRET'],
        tools: [],
      }),
    ).toEqual({
      type: 'session_start',
      session_id: sid,
      mode: 'edit',
      provider: 'openai',
      model: 'm',
      cwd: '/w',
    });
    expect(entry({ type: 'user_message', text: 'SECRET' })).toBeUndefined();
    expect(
      entry({
        type: 'assistant_message',
        round: 1,
        model: 'm',
        text: 'SECRET',
        tool_calls: [],
        recovered: 0,
        usage: { input: 1, output: 1, reported: true },
        cost_usd: null,
      }),
    ).toBeUndefined();

    const edit = entry({
      type: 'tool_start',
      call_id: 'c1',
      tool: 'edit_file',
      args: { path: 'a.ts', old_string: 'SECRET', new_string: 'SECRET' },
    });
    expect(edit).toMatchObject({ type: 'tool_start', tool: 'edit_file', call_id: 'c1', path: 'a.ts' });
    expect(edit?.args_sha256).toMatch(/^[0-9a-f]{64}$/);
    const shell = entry({
      type: 'tool_start',
      call_id: 'c2',
      tool: 'shell',
      args: { command: 'curl -H "Authorization: SECRET"' },
    });
    expect(Object.keys(shell ?? {}).sort()).toEqual(['args_sha256', 'call_id', 'session_id', 'tool', 'type']);

    const result = entry({
      type: 'tool_result',
      call_id: 'c1',
      tool: 'write_file',
      output: 'SECRET',
      is_error: false,
      files_changed: ['a.ts'],
      diff_lines: 3,
      duration_ms: 5,
    });
    expect(result).toEqual({
      type: 'tool_result',
      session_id: sid,
      call_id: 'c1',
      tool: 'write_file',
      is_error: false,
      files_changed: ['a.ts'],
      diff_lines: 3,
      duration_ms: 5,
    });
    expect(
      entry({
        type: 'gate_decision',
        call_id: 'c3',
        tool: 'shell',
        decision: 'deny',
        deny: 'mode',
        reason: 'shell is off in ask mode',
      }),
    ).toMatchObject({ decision: 'deny', deny: 'mode', reason: 'shell is off in ask mode' });
    expect(entry({ type: 'model_fallback', round: 2, from: 'a', to: 'b', error: 'SECRET' })).toEqual({
      type: 'model_fallback',
      session_id: sid,
      round: 2,
      from: 'a',
      to: 'b',
    });
    expect(
      entry({
        type: 'session_end',
        code: 'COMPLETED',
        reason: 'done',
        summary: 'SECRET',
        rounds: 2,
        tokens: { input: 10, output: 5 },
        cost_usd: null,
        files_changed: ['a.ts'],
      }),
    ).toEqual({
      type: 'session_end',
      session_id: sid,
      code: 'COMPLETED',
      reason: 'done',
      rounds: 2,
      tokens: { input: 10, output: 5 },
      cost_usd: null,
      files_changed: ['a.ts'],
    });
  });

  it('records hook decisions and the safety net without command lines or contents', () => {
    expect(
      entry({
        type: 'hook',
        event: 'PreToolUse',
        decision: 'deny',
        reason: 'no',
        hook: 'guard --token SECRET',
        tool: 'shell',
      }),
    ).toEqual({
      type: 'hook',
      session_id: sid,
      event: 'PreToolUse',
      tool: 'shell',
      decision: 'deny',
      reason: 'no',
      hook: 'guard',
    });
    expect(
      entry({
        type: 'safety_net',
        kind: 'copy',
        dir: '/s',
        files: [{ path: 'a.ts', existed: true, copy: 'c/0' }],
      }),
    ).toEqual({ type: 'safety_net', session_id: sid, kind: 'copy', paths: ['a.ts'] });
  });

  it('never lets a secret into a line', () => {
    const dir = auditDir();
    const log = new AuditLog(dir);
    const events: SessionEvent[] = [
      { type: 'user_message', text: 'SECRET' },
      { type: 'tool_start', call_id: 'c1', tool: 'write_file', args: { path: 'x', content: 'SECRET' } },
      { type: 'tool_start', call_id: 'c2', tool: 'shell', args: { command: 'echo SECRET' } },
      { type: 'tool_start', call_id: 'c3', tool: 'remember', args: { text: 'SECRET' } },
    ];
    for (const e of events) {
      const a = auditEntryFor(e, sid);
      if (a) log.append(a);
    }
    const text = readdirSync(dir)
      .filter((f) => !f.startsWith('.'))
      .map((f) => readFileSync(join(dir, f), 'utf8'))
      .join('');
    expect(text).not.toContain('SECRET');
    expect(verifyChain(dir)).toMatchObject({ ok: true, lines: 3 });
  });
});
