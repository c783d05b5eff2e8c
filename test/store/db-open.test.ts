/** Several keel processes opening one fresh KEEL_HOME at once (a chat turn, a test reading the log, `keel serve`). */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { tempDir } from '../helpers/tmp.js';

// the built module (npm test builds first): a child process cannot load TypeScript
const DB_MODULE = fileURLToPath(new URL('../../dist/store/db.js', import.meta.url));

function opener(path: string): Promise<{ code: number | null; stderr: string }> {
  // each child waits for the same moment, then opens (and so migrates) the database
  const start = Date.now() + 4000;
  const script = `
    const { openDb } = await import(${JSON.stringify(DB_MODULE)});
    while (Date.now() < ${start}) {}
    openDb(${JSON.stringify(path)}).close();
  `;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('openDb', () => {
  it('migrates a fresh database once when several processes open it at the same moment', async () => {
    const path = join(tempDir(), 'keel.db');
    const results = await Promise.all(Array.from({ length: 8 }, () => opener(path)));
    for (const r of results) expect(r.stderr).toBe('');
    expect(results.map((r) => r.code)).toEqual(Array(8).fill(0));
    const db = openDb(path);
    expect(db.prepare('SELECT COUNT(*) AS n FROM schema_version').get()).toEqual({ n: 1 });
    db.close();
  }, 60_000);
});
