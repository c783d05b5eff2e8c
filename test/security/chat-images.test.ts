/**
 * An image mention is a path a pasted, hostile text can choose, and its bytes leave the machine: only a
 * real image of its named format, at most 10 MiB, inside the workspace (no link out, no FIFO that hangs
 * the chat) is sent; a model its server says reads no images gets none. A forged log cannot make a
 * resumed session send a file from outside the workspace either.
 */

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { chatBodies, keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
// the outside file: a different picture, so its bytes are recognisable in any request
const SECRET = Buffer.concat([PNG.subarray(0, 8), Buffer.from('secret-picture-bytes-outside')]);

describe('image mentions: only checked images from inside the workspace', () => {
  it('refuses a link out, ../, a fake PNG, a 5 GiB sparse PNG (before reading it), a FIFO and a model that reads no images; a forged log path is not re-sent on resume', async () => {
    const outside = tempDir('keel-outside-');
    writeFileSync(join(outside, 'secret.png'), SECRET);
    const repo = gitRepo({ 'README.md': '# r\n', 'fake.png': 'just text, not a picture\n' });
    writeFileSync(join(repo, 'shot.png'), PNG);
    symlinkSync(join(outside, 'secret.png'), join(repo, 'link.png'));
    mkdirSync(join(repo, 'pics'));
    symlinkSync('../../', join(repo, 'pics', 'up'));
    // a PNG header and 5 GiB of hole: read whole, it would not fit in memory
    const fd = openSync(join(repo, 'big.png'), 'w');
    writeSync(fd, PNG, 0, PNG.length, 0);
    writeSync(fd, Buffer.from([0]), 0, 1, 5 * 1024 ** 3);
    closeSync(fd);
    execFileSync('mkfifo', [join(repo, 'fifo.png')]);
    const rel = `../${outside.split('/').pop()}/secret.png`;

    const server = await model([{ text: 'one square' }, { text: 'resumed' }]);
    const home = keelHome();
    const lines = [
      'look @link.png',
      `look @${rel}`,
      `look @pics/up/${outside.split('/').pop()}/secret.png`,
      'look @fake.png',
      'look @big.png',
      'look @fifo.png',
      'look @shot.png',
    ];
    const run = await keel(['chat', ...modelFlags(server)], {
      cwd: repo,
      home,
      input: `${lines.join('\n')}\n`,
    });
    const out = (run.stdout + run.stderr).replace(/\s+/g, ' ');
    expect(out).toContain('@link.png is a link that leads outside the workspace');
    expect(out).toContain(`@${rel} is outside the workspace`);
    expect(out).toMatch(/@pics\/up\/\S+ is a link that leads outside the workspace/);
    expect(out).toContain('@fake.png is not a png image (its first bytes say otherwise); not attached');
    expect(out).toContain('@big.png is 5120.0 MiB, over the 10.0 MiB an image may be; not attached');
    expect(out).toContain('@fifo.png is not a file');
    expect(out).toContain('one square');
    // one request: the last line's, with the one real picture
    const bodies = chatBodies(server);
    expect(bodies).toHaveLength(1);
    const sent = JSON.stringify(bodies);
    expect(sent).toContain(PNG.toString('base64'));
    expect(sent).not.toContain(SECRET.toString('base64'));

    // the log is forged to name the outside file, with its true hash: a resume does not send it
    const sessionId = findSession(home);
    const db = new Database(join(home, 'keel.db'));
    db.prepare(
      "UPDATE events SET data = json_set(data, '$.images[0].path', ?, '$.images[0].sha256', ?, '$.images[0].bytes', ?) WHERE session_id = ? AND type = 'user_message'",
    ).run(rel, createHash('sha256').update(SECRET).digest('hex'), SECRET.length, sessionId);
    db.close();
    const resumed = await keel(['sessions', 'resume', sessionId, ...modelFlags(server), '-m', 'again'], {
      cwd: repo,
      home,
    });
    expect(resumed.code).toBe(0);
    const all = JSON.stringify(chatBodies(server));
    expect(all).not.toContain(SECRET.toString('base64'));
    expect(all).toContain(
      `[image ${rel} was attached here but is not sent again: @${rel} is outside the workspace`,
    );
  });

  it('a model llama-server says reads no images (/props modalities) gets none: nothing is sent', async () => {
    const server = await model([{ text: 'never' }], { vision: false });
    const repo = gitRepo({ 'README.md': '# r\n' });
    writeFileSync(join(repo, 'shot.png'), PNG);
    const run = await keel(['chat', ...modelFlags(server)], {
      cwd: repo,
      home: keelHome(),
      input: 'see @shot.png\n',
    });
    expect((run.stdout + run.stderr).replace(/\s+/g, ' ')).toContain(
      'not sent: test-model does not accept images (llama-server /props modalities)',
    );
    expect(chatBodies(server)).toEqual([]);
  });
});

function findSession(home: string): string {
  const db = new Database(join(home, 'keel.db'), { readonly: true });
  try {
    return (db.prepare('SELECT id FROM sessions ORDER BY rowid DESC LIMIT 1').get() as { id: string }).id;
  } finally {
    db.close();
  }
}
