/**
 * Forging the audit chain without keel's key, judged by the real `keel audit verify`: a consistent re-chain
 * with a new head, a chain cut to one line with its head deleted, a cut tail in the newest day file checked
 * alone, and a check against the wrong key. Each forgery is also made with keel's own key, where the
 * chain must pass, so these tests prove it is the key that stops them.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { chatBodies, keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { forgeChain, otherKey, readChainLines } from '../helpers/audit-forge.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

/** A KEEL_HOME whose chain a real `keel ask` session wrote (start, gate, tool, result, end). */
let fixture: string;
let repo: string;

beforeAll(async () => {
  repo = gitRepo();
  fixture = keelHome();
  const server = await model([
    { tool_calls: [{ name: 'read_file', arguments: { path: 'README.md' } }] },
    { text: 'It is a demo.' },
  ]);
  const run = await keel(['ask', ...modelFlags(server), 'what is this?'], { cwd: repo, home: fixture });
  expect(run.code).toBe(0);
});

/** A copy of the fixture home, its audit folder, its only day file and keel's key. */
function copyHome(): { home: string; dir: string; file: string; key: Buffer } {
  const home = tempDir('keel-home-');
  cpSync(fixture, home, { recursive: true });
  const dir = join(home, 'audit');
  const [name] = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
  if (!name) throw new Error('the session wrote no audit day file');
  const key = Buffer.from(readFileSync(join(home, 'audit.key'), 'utf8').trim(), 'hex');
  return { home, dir, file: join(dir, name), key };
}

const verify = (home: string, ...args: string[]) => keel(['audit', 'verify', ...args], { cwd: repo, home });

describe('audit forgery', () => {
  it('an intact chain passes and prints its head hash; the key is 0600 and outside the audit folder', async () => {
    const { home, dir } = copyHome();
    const head = (JSON.parse(readFileSync(join(dir, 'head.json'), 'utf8')) as { hash: string }).hash;
    const r = await verify(home);
    expect(r.stdout).toMatch(/^audit chain intact: \d+ lines\n/);
    expect(r.stdout).toContain(`head ${head}\n`);
    expect(r.code).toBe(0);
    expect(statSync(join(home, 'audit.key')).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).some((f) => f.includes('key'))).toBe(false);
  });

  it('a consistent re-chain with a new head.json fails without the key', async () => {
    const { home, dir, file, key } = copyHome();
    const name = file.slice(dir.length + 1);
    const before = await verify(home, '--json');
    const anchored = (JSON.parse(before.stdout) as { head: string }).head;
    // drop the gate decision and claim a different tool ran
    const forged = readChainLines(file)
      .filter((l) => l.type !== 'gate_decision')
      .map((l) => (l.tool ? { ...l, tool: 'list_dir' } : l));

    forgeChain(dir, name, forged, otherKey());
    const sealedWrong = await verify(home);
    expect(sealedWrong.code).toBe(1);
    expect(sealedWrong.stderr).toContain(`audit chain broken at ${file} line 1: seal mismatch`);

    forgeChain(dir, name, forged, 'unsealed');
    const unsealed = await verify(home);
    expect(unsealed.code).toBe(1);
    expect(unsealed.stderr).toContain('no line is sealed');

    // with keel's key the very same forgery verifies: the key, and only the key, stops it ...
    forgeChain(dir, name, forged, key);
    expect((await verify(home)).code).toBe(0);
    // ... and a head anchored elsewhere still catches someone who has the key
    const anchor = await verify(home, '--expect-head', anchored);
    expect(anchor.code).toBe(1);
    expect(anchor.stderr).toContain('the chain was rewritten');
  });

  it('a chain cut to one line with head.json deleted fails, and the next session does not extend it', async () => {
    const { home, dir, file } = copyHome();
    writeFileSync(file, `${readFileSync(file, 'utf8').split('\n')[0]}\n`);
    unlinkSync(join(dir, 'head.json'));
    const r = await verify(home);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('head.json is missing');
    const one = await verify(home, file);
    expect(one.code).toBe(1);
    expect(one.stderr).toContain('head.json is missing');

    const server = await model([{ text: 'hi' }]);
    const session = await keel(['ask', ...modelFlags(server), 'hello'], { cwd: repo, home });
    // fail closed, say why: an environment error naming the chain, not a stack trace
    expect(session.code).toBe(3);
    expect(session.stderr).toContain(`audit chain ${join(dir, 'head.json')} is missing`);
    expect(session.stderr).not.toContain('    at ');
    expect(readFileSync(file, 'utf8').trimEnd().split('\n')).toHaveLength(1);
  });

  it('keel audit verify FILE on the newest day file catches a cut tail', async () => {
    const { home, file } = copyHome();
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    writeFileSync(file, `${lines.slice(0, -2).join('\n')}\n`);
    const r = await verify(home, file);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the tail was cut');
  });

  it('verifying with a different key fails, and a copied folder does not carry the key', async () => {
    const { home, dir } = copyHome();
    const wrong = join(tempDir(), 'other.key');
    writeFileSync(wrong, `${otherKey().toString('hex')}\n`);
    const r = await verify(home, '--key', wrong);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('sealed with another key');

    // someone shown a copy of the folder, with their own KEEL_HOME: the seals cannot be checked, so not "intact"
    const theirs = keelHome();
    mkdirSync(join(theirs, 'shown'));
    cpSync(dir, join(theirs, 'shown', 'audit'), { recursive: true });
    const shown = await verify(theirs, join(theirs, 'shown', 'audit'));
    expect(shown.code).toBe(1);
    expect(shown.stderr).toContain('no audit key');
    // ... and with the owner's key (handed over on purpose) it verifies
    expect(
      (await verify(theirs, join(theirs, 'shown', 'audit'), '--key', join(home, 'audit.key'))).code,
    ).toBe(0);
  });

  it('a sandboxed command cannot read the key, even with KEEL_HOME inside the workspace', async () => {
    const work = gitRepo();
    const home = join(work, 'state');
    const warm = await model([{ text: 'ok' }]);
    expect((await keel(['ask', ...modelFlags(warm), 'hi'], { cwd: work, home })).code).toBe(0);
    const key = readFileSync(join(home, 'audit.key'), 'utf8').trim();
    const command = `echo RAN; cat ${join(home, 'audit.key')}; cat ${join(home, 'audit.key')} > stolen.txt`;
    const server = await model([
      { tool_calls: [{ name: 'shell', arguments: { command } }] },
      { text: 'done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'x'], { cwd: work, home });
    expect(run.code).toBe(0);
    const sent = JSON.stringify(chatBodies(server));
    expect(sent).toContain('RAN'); // the command did run, in the sandbox
    expect(sent).not.toContain(key);
    expect(readFileSync(join(work, 'stolen.txt'), 'utf8')).not.toContain(key);
  });

  it('a model cannot swap in a key of its own, even with KEEL_HOME inside the workspace', async () => {
    const work = gitRepo();
    const home = join(work, 'state');
    const warm = await model([{ text: 'ok' }]);
    expect((await keel(['ask', ...modelFlags(warm), 'hi'], { cwd: work, home })).code).toBe(0);
    const key = readFileSync(join(home, 'audit.key'), 'utf8');
    // with a key it knows, whoever drives the model could re-seal a forged chain
    const mine = `${otherKey().toString('hex')}\n`;
    const server = await model([
      { tool_calls: [{ name: 'write_file', arguments: { path: 'state/audit.key', content: mine } }] },
      {
        tool_calls: [{ name: 'shell', arguments: { command: `printf '${mine.trim()}' > state/audit.key` } }],
      },
      { text: 'done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), 'x'], { cwd: work, home });
    expect(run.code).toBe(0);
    expect(readFileSync(join(home, 'audit.key'), 'utf8')).toBe(key);
    expect((await verify(home)).code).toBe(0);
  });
});
