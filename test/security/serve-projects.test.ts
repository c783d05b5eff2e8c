/**
 * `keel serve --project A --project B` serves the projects the person named at start, one per request
 * (`?project=NAME`): a session or run of B asked for under A (the default) is an unknown id, a 404,
 * read, streamed, answered, cancelled, forked, steered, re-set, applied or named as a parent; a name
 * that is not one of the served ones is a 400, whatever it looks like (a served project's path, `..`, a
 * link into a served project, a nested repository of one, the name twice); each project's files are
 * its own; a session started under B is recorded in B and not listed under A, and the list of projects
 * (token only) counts B's waiting question under either name. And the folders are
 * checked before the server listens: a folder inside a repository, one named twice, one missing.
 */
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/store/db.js';
import { EventLog } from '../../src/store/event-log.js';
import { chatBodies, keel, keelHome, model, modelFlags, withEventLog } from '../e2e/harness.js';
import { readStream, startServe } from '../e2e/serve-harness.js';
import { git, gitRepo, tempDir } from '../helpers/tmp.js';

describe('keel serve --project: the projects named at start, one at a time', () => {
  it("answers for the chosen project only: another project's ids are 404, a name not served is 400, files are the project's own", async () => {
    const server = await model([
      // B's session: it asks to write, and waits for a person
      {
        task: 'B-PROMPT',
        tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'b.txt', content: 'B\n' } }],
      },
      { task: 'B-PROMPT', text: 'B-ANSWER wrote it' },
      { task: 'A-PROMPT', text: 'A-ANSWER' },
      // what anything else would be answered with, if the server let it run
      { text: 'ran where it should not' },
    ]);
    const home = keelHome('approvals = "writes"\n');
    const a = realpathSync(gitRepo({ 'README.md': '# A-README\n', 'src/a.ts': 'export const a = 1;\n' }));
    const inner = join(a, 'vendor', 'inner');
    mkdirSync(inner, { recursive: true });
    writeFileSync(join(inner, 'README.md'), '# nested\n');
    git(inner, 'init', '-q', '-b', 'main');
    const b = realpathSync(gitRepo({ 'notes.txt': 'B-FILE-TEXT\n' }));
    const links = tempDir('keel-links-');
    symlinkSync(join(a, 'src'), join(links, 'into-a'));
    const nameA = basename(a);
    const nameB = basename(b);
    // a fix run of B, as `keel fix` records its row
    const bRun = '20260101-000000-b0b0b0';
    withEventLog(home, (log) =>
      log.createSession({ id: bRun, mode: 'fix', cwd: b, provider: 'openai', model: 'm', prompt: 'B-FIX' }),
    );

    const s = await startServe({
      cwd: tempDir('keel-elsewhere-'),
      home,
      args: [...modelFlags(server), '--project', a, '--project', b],
    });
    const listed = await s.api('GET', '/v1/projects');
    expect(listed.body.projects).toEqual([
      { name: nameA, path: a, default: true, waiting: 0, waiting_builds: 0 },
      { name: nameB, path: b, default: false, waiting: 0, waiting_builds: 0 },
    ]);
    // --json printed the same projects at start
    expect(s.projects).toEqual([
      { name: nameA, path: a, default: true },
      { name: nameB, path: b, default: false },
    ]);
    const underB = `project=${encodeURIComponent(nameB)}`;

    // a session started under B runs in B and waits there for its answer
    const started = await s.api('POST', `/v1/sessions?${underB}`, { prompt: 'B-PROMPT', mode: 'edit' });
    expect(started.status).toBe(201);
    const bId = started.body.session_id as string;
    const frames = await readStream(
      `${s.url}v1/sessions/${bId}/events?${underB}`,
      (f) => f.event === 'approval',
      { token: s.token },
    );
    const question = frames.at(-1)?.data.id as string;
    // the list tells of B's waiting question whichever project is chosen (the page's alert reads it), and
    // only with the token
    for (const scope of ['', `?project=${encodeURIComponent(nameA)}`, `?${underB}`]) {
      const counts = (await s.api('GET', `/v1/projects${scope}`)).body.projects;
      expect(
        counts.map((p: { waiting: number }) => p.waiting),
        scope,
      ).toEqual([0, 1]);
    }
    for (const token of [null, 'wrong']) {
      const res = await s.api('GET', '/v1/projects', undefined, { token });
      expect(res.status).toBe(401);
      expect(JSON.stringify(res.body)).not.toMatch(new RegExp(`${nameB}|waiting|B-PROMPT`));
    }
    const own = await s.api('POST', '/v1/sessions', { prompt: 'A-PROMPT' });
    expect(own.status).toBe(201);
    const aId = own.body.session_id as string;

    // under A (by default, or by name): B's session and run are unknown ids, however they are reached
    for (const scope of ['', `?project=${encodeURIComponent(nameA)}`]) {
      const q = (path: string) => `${path}${scope}`;
      for (const [method, path, body] of [
        ['GET', `/v1/sessions/${bId}`],
        ['GET', `/v1/sessions/${bId}/diff`],
        ['GET', `/v1/sessions/${bId}/events`],
        ['POST', `/v1/sessions/${bId}/approvals/${question}`, { decision: 'allow' }],
        ['POST', `/v1/sessions/${bId}/cancel`],
        ['POST', `/v1/sessions/${bId}/fork`, { prompt: 'branch it here' }],
        ['POST', `/v1/sessions/${bId}/messages`, { text: 'go on, here' }],
        ['POST', `/v1/sessions/${bId}/settings`, { mode: 'auto' }],
        ['POST', '/v1/sessions', { prompt: 'a child of theirs', parent: bId }],
        ['GET', `/v1/runs/${bRun}`],
        ['GET', `/v1/runs/${bRun}/patch`],
        ['POST', `/v1/runs/${bRun}/apply`, { confirm: true }],
        ['POST', `/v1/runs/${bRun}/approvals/q-000000000000`, { decision: 'allow' }],
      ] as Array<[string, string, unknown?]>) {
        const res = await s.api(method, q(path), body);
        expect(res.status, `${method} ${q(path)}`).toBe(404);
        expect(JSON.stringify(res.body)).not.toMatch(/B-PROMPT|B-FIX|B-ANSWER/);
      }
      const list = await s.api('GET', q('/v1/sessions'));
      expect(list.body.sessions.map((x: { session_id: string }) => x.session_id)).toEqual([aId]);
      expect(list.body.project).toBe(a);
      expect((await s.api('GET', q('/v1/runs'))).body.runs).toEqual([]);
      expect((await s.api('GET', q('/v1/files/content?path=notes.txt'))).status).toBe(404);
    }
    // and A's session is as unknown under B
    for (const path of [`/v1/sessions/${aId}`, `/v1/sessions/${aId}/events`, `/v1/sessions/${aId}/diff`])
      expect((await s.api('GET', `${path}?${underB}`)).status, path).toBe(404);

    // a name not served is refused before anything is read or started, on every kind of route
    const notServed = [
      a,
      b,
      '..',
      '.',
      `../${nameB}`,
      join(links, 'into-a'),
      inner,
      'inner',
      'vendor/inner',
      `${nameB} `,
      nameB.toUpperCase(),
      '',
    ];
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/v1/projects'],
      ['GET', '/v1/sessions'],
      ['GET', `/v1/sessions/${bId}`],
      ['GET', `/v1/sessions/${bId}/events`],
      ['POST', `/v1/sessions/${bId}/approvals/${question}`, { decision: 'allow' }],
      ['POST', '/v1/sessions', { prompt: 'NOT-SERVED-PROMPT' }],
      ['GET', '/v1/runs'],
      ['GET', '/v1/files'],
      ['GET', '/v1/files/content?path=README.md'],
      ['GET', '/v1/batches'],
      ['GET', '/v1/hub'],
      ['GET', '/v1/memory/search?q=x'],
      ['POST', '/v1/fix', { task: 'NOT-SERVED-FIX' }],
      ['POST', '/v1/build', { feature: 'NOT-SERVED-BUILD' }],
    ];
    for (const name of notServed)
      for (const [method, path, body] of routes) {
        const sep = path.includes('?') ? '&' : '?';
        const res = await s.api(method, `${path}${sep}project=${encodeURIComponent(name)}`, body);
        expect(res.status, `${method} ${path} project=${name}`).toBe(400);
        expect(res.body.code).toBe('BAD_PROJECT');
        expect(JSON.stringify(res.body)).not.toMatch(/B-PROMPT|B-FILE-TEXT|A-README/);
      }
    // one name, not two (a proxy and the server must not read different ones)
    const twice = await s.api('GET', `/v1/sessions?project=${nameA}&${underB}`);
    expect(twice.status).toBe(400);

    // each project's files are its own; a path out of B is refused as before
    const bFile = await s.api('GET', `/v1/files/content?path=notes.txt&${underB}`);
    expect(bFile.status).toBe(200);
    expect(JSON.stringify(bFile.body)).toContain('B-FILE-TEXT');
    const aFile = await s.api('GET', '/v1/files/content?path=README.md');
    expect(JSON.stringify(aFile.body)).toContain('A-README');
    expect((await s.api('GET', `/v1/files/content?path=README.md&${underB}`)).status).toBe(404);
    expect((await s.api('GET', `/v1/files/content?path=../${nameA}/README.md&${underB}`)).status).toBe(400);

    // under B its session is known, listed and answered; A's list does not hold it
    const bList = await s.api('GET', `/v1/sessions?${underB}`);
    expect(bList.body.project).toBe(b);
    expect(bList.body.sessions.map((x: { session_id: string }) => x.session_id)).toEqual([bId]);
    expect((await s.api('GET', `/v1/runs/${bRun}?${underB}`)).status).toBe(200);
    const answered = await s.api('POST', `/v1/sessions/${bId}/approvals/${question}?${underB}`, {
      decision: 'allow',
    });
    expect(answered.status).toBe(200);
    await expect
      .poll(async () => (await s.api('GET', `/v1/sessions/${bId}?${underB}`)).body.state, { timeout: 30_000 })
      .toBe('completed');
    expect(
      (await s.api('GET', '/v1/projects')).body.projects.map((p: { waiting: number }) => p.waiting),
    ).toEqual([0, 0]);
    await expect
      .poll(async () => (await s.api('GET', `/v1/sessions/${aId}`)).body.state, { timeout: 30_000 })
      .toBe('completed');
    // recorded in B (its write too), and nothing started for a refused name: three model requests in all
    const db = openDb(join(home, 'keel.db'));
    const log = new EventLog(db);
    expect(log.getSession(bId)?.cwd).toBe(b);
    expect(log.getSession(aId)?.cwd).toBe(a);
    expect(log.listSessions(100).map((r) => r.prompt)).not.toContain('NOT-SERVED-PROMPT');
    db.close();
    expect(chatBodies(server)).toHaveLength(3);
    expect(JSON.stringify(chatBodies(server))).not.toMatch(/NOT-SERVED/);
  });

  it('refuses, before it listens, a folder inside a repository, the same project twice, a missing folder, and -C with --project', async () => {
    const home = keelHome();
    const repo = realpathSync(gitRepo({ 'src/x.ts': 'x\n' }));
    const links = tempDir('keel-links-');
    symlinkSync(repo, join(links, 'same'));
    for (const [args, says] of [
      [['--project', join(repo, 'src')], `is inside the repository ${repo}`],
      [['--project', repo, '--project', join(links, 'same')], 'the same project as --project'],
      [['--project', join(repo, 'missing')], 'no such folder'],
      [['-C', repo, '--project', repo], '-C and --project'],
    ] as Array<[string[], string]>) {
      const run = await keel(['serve', '--listen', '127.0.0.1:0', ...args], { cwd: repo, home });
      expect(run.code, args.join(' ')).not.toBe(0);
      expect(run.stderr, args.join(' ')).toContain(says);
      expect(run.stderr).not.toContain('listening');
    }
    const help = await keel(['serve', '--help'], { cwd: repo, home });
    expect(help.stdout).toContain('--project <dir>');
  });
});
