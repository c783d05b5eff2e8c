import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { tempDir } from '../helpers/tmp.js';

// the built modules (npm test builds first): a child process cannot load TypeScript
const distModule = (path: string) => fileURLToPath(new URL(`../../dist/${path}`, import.meta.url));

describe('event log', () => {
  it('appends events in order and reads them back after reopening', () => {
    const path = join(tempDir(), 'keel.db');
    const db = openDb(path);
    const log = new EventLog(db);
    log.createSession({ id: 's1', mode: 'ask', cwd: '/w', provider: 'openai', model: 'm', prompt: 'hi' });
    log.append('s1', 'user_message', { text: 'hi' });
    log.append('s1', 'assistant_message', { text: 'hello' });
    db.close();

    const again = new EventLog(openDb(path));
    const events = again.events('s1');
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [1, 'user_message'],
      [2, 'assistant_message'],
    ]);
    expect(events[1]?.data).toEqual({ text: 'hello' });
    // a second writer continues the sequence instead of colliding
    again.append('s1', 'session_end', { code: 'COMPLETED' });
    expect(again.events('s1').at(-1)?.seq).toBe(3);
  });

  it('two writers on one session interleave without colliding on seq', () => {
    const path = join(tempDir(), 'keel.db');
    const a = new EventLog(openDb(path));
    const b = new EventLog(openDb(path));
    a.createSession({ id: 's1', mode: 'ask', cwd: '/w', provider: 'p', model: 'm', prompt: 'x' });
    for (let i = 0; i < 10; i++) {
      a.append('s1', 'user_message', { text: `a${i}` });
      b.append('s1', 'user_message', { text: `b${i}` });
    }
    expect(a.events('s1').map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(b.lastSeq('s1')).toBe(20);
  });

  it('records which process wrote each event; a fork keeps the writers of what it copies', () => {
    const path = join(tempDir(), 'keel.db');
    const log = new EventLog(openDb(path));
    log.createSession({ id: 'run', mode: 'fix', cwd: '/w', provider: 'p', model: 'm', prompt: 'x' });
    log.append('run', 'run_start', {});
    // another process goes on with the same log (a resumed run)
    const script = `
      const { openDb } = await import(${JSON.stringify(distModule('store/db.js'))});
      const { EventLog } = await import(${JSON.stringify(distModule('store/event-log.js'))});
      new EventLog(openDb(${JSON.stringify(path)})).append('run', 'fix_resume', {});
      console.log(process.pid);
    `;
    const other = Number(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }),
    );
    expect(other).not.toBe(process.pid);
    expect(log.writers('run')).toEqual([
      { seq: 1, pid: process.pid },
      { seq: 2, pid: other },
    ]);
    log.forkSession('run', 'fork');
    expect(log.writers('fork').map((w) => w.pid)).toEqual([process.pid, other]);
  });

  it('a fork copies the events up to its seq and links to its parent', () => {
    const log = new EventLog(openDb(':memory:'));
    log.createSession({ id: 'p', mode: 'ask', cwd: '/w', provider: 'p', model: 'm', prompt: 'x' });
    for (let i = 0; i < 5; i++) log.append('p', 'user_message', { text: `m${i}` });
    const fork = log.forkSession('p', 'f', 3);
    expect(fork).toMatchObject({ id: 'f', parent_id: 'p', forked_seq: 3, mode: 'ask' });
    expect(log.events('f').map((e) => e.data.text)).toEqual(['m0', 'm1', 'm2']);
    expect(log.append('f', 'user_message', { text: 'new' }).seq).toBe(4);
    expect(log.events('p')).toHaveLength(5);
  });

  it('finds sessions by unique prefix only', () => {
    const log = new EventLog(openDb(':memory:'));
    for (const id of ['20260101-aaa', '20260101-aab', '20260202-ccc']) {
      log.createSession({ id, mode: 'ask', cwd: '/w', provider: 'p', model: 'm', prompt: 'x' });
    }
    expect(log.findSession('20260202')?.id).toBe('20260202-ccc');
    // an ambiguous prefix is not "no such session": it names the candidates
    expect(() => log.findSession('20260101-aa')).toThrow(/ambiguous.*20260101-aab, 20260101-aaa/);
    expect(log.findSession('%')).toBeUndefined();
    expect(log.listSessions(2).map((s) => s.id)).toHaveLength(2);
  });

  it('refuses a database from a newer keel', () => {
    const path = join(tempDir(), 'keel.db');
    const db = openDb(path);
    db.prepare('UPDATE schema_version SET version = 999').run();
    db.close();
    expect(() => openDb(path)).toThrow(/newer than this keel understands/);
  });
});
