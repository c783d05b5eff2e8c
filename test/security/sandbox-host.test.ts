/**
 * The sandbox hides the host (issue 7, findings 2 and 7): a scripted model's shell commands, run by the
 * real `keel` binary in real bubblewrap, try to read a home's SSH key, /etc/shadow and keel's own state,
 * to reach unix sockets of the host, and to fill /tmp. None of it may reach the tool results.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findProgram } from '../../src/policy/sandbox-limits.js';
import { chatBodies, keel, model, modelFlags, requestMessages } from '../e2e/harness.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';

const BWRAP = findProgram('bwrap', process.env.PATH);
const tag = randomBytes(6).toString('hex');
const SSH_SECRET = `ssh-private-${tag}`;
const PROMPT_SECRET = `prompt-secret-${tag}`;

interface Listener {
  server: Server;
  path: string;
  accepted: () => number;
}

async function listen(path: string): Promise<Listener> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.on('error', () => {});
    socket.end('hello\n');
  });
  await new Promise<void>((done) => server.listen(path, done));
  return { server, path, accepted: () => count };
}

// Tries each unix socket path (a leading @ is the abstract namespace) and prints one verdict per path
const CONNECT = `const net=require('net');let left=process.argv.length-1;
for(const p of process.argv.slice(1)){const s=net.connect(p.startsWith('@')?'\\0'+p.slice(1):p);
s.on('connect',()=>{console.log('CONNECTED '+p);s.destroy();if(!--left)process.exit(0)});
s.on('error',(e)=>{console.log('REFUSED '+p+' '+e.code);if(!--left)process.exit(0)});}`;

describe.skipIf(!BWRAP)('the sandbox hides the host', () => {
  const uid = process.getuid?.() ?? 0;
  const runUser = `/run/user/${uid}`;
  let madeRunUser = false;
  const listeners: Listener[] = [];
  let toolResults: string[] = [];
  let home: string;
  let state: string;
  let repo: string;
  let exitCode: number | null;
  const bigFile = `/tmp/keel-big-${tag}`;

  beforeAll(async () => {
    home = tempDir('keel-user-home-');
    mkdirSync(join(home, '.ssh'));
    writeFileSync(join(home, '.ssh/id_ed25519'), `${SSH_SECRET}\n`, { mode: 0o600 });
    // KEEL_HOME inside the workspace: the hard case, since the workspace itself is visible
    repo = gitRepo({ '.gitignore': 'state/\n', 'README.md': '# demo\n' });
    state = join(repo, 'state');
    mkdirSync(state);
    // a half-memory /tmp cap of 64 MB
    writeFileSync(join(state, 'config.toml'), '[sandbox_limits]\nmemory_mb = 128\n');
    if (!existsSync(runUser)) {
      mkdirSync(runUser, { recursive: true, mode: 0o700 });
      madeRunUser = true;
    }
    listeners.push(await listen(join(runUser, `keel-test-${tag}.sock`)));
    listeners.push(await listen(join(home, `agent-${tag}.sock`)));
    listeners.push(await listen(`\0keel-test-${tag}`));

    const reads = [
      join(home, '.ssh/id_ed25519'),
      '/etc/shadow',
      '/etc/gshadow',
      join(state, 'keel.db'),
      join(state, 'audit.key'),
      join(state, 'config.toml'),
    ];
    const readAll = reads
      .map((f) => `if cat '${f}' 2>/dev/null; then echo 'READ ${f}'; else echo 'DENIED ${f}'; fi`)
      .join('; ');
    const sockets = [...listeners.slice(0, 2).map((l) => l.path), `@keel-test-${tag}`];
    const server = await model([
      {
        tool_calls: [
          { name: 'shell', arguments: { command: readAll } },
          { name: 'shell', arguments: { command: `ls -A '${state}' '${state}/audit'; echo listed` } },
          { name: 'shell', arguments: { command: `cat '${state}'/audit/*.jsonl; echo audit-tried` } },
          {
            name: 'shell',
            arguments: { command: `node -e "${CONNECT.replace(/"/g, '\\"')}" ${sockets.join(' ')}` },
          },
          {
            name: 'shell',
            arguments: { command: `head -c 80000000 /dev/zero > ${bigFile}; echo "exit=$?"; df -m /tmp` },
          },
        ],
      },
      { text: 'done' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), `look around ${PROMPT_SECRET}`], {
      cwd: repo,
      home,
      env: { KEEL_HOME: state },
      timeoutMs: 60_000,
    });
    exitCode = run.code;
    const second = chatBodies(server)[1];
    toolResults = second
      ? requestMessages(second)
          .filter((m) => m.role === 'tool')
          .map((m) => m.content ?? '')
      : [];
  }, 90_000);

  afterAll(async () => {
    for (const l of listeners) await new Promise((done) => l.server.close(done));
    for (const l of listeners) if (!l.path.startsWith('\0')) rmSync(l.path, { force: true });
    if (madeRunUser) rmSync(runUser, { recursive: true, force: true });
    rmSync(bigFile, { force: true });
  });

  it('the session completes and every command ran', () => {
    expect(exitCode).toBe(0);
    expect(toolResults).toHaveLength(5);
  });

  it('no secret byte reaches the model: SSH key, shadow, keel.db (every prompt), the audit key and log', () => {
    const all = toolResults.join('\n');
    expect(all).not.toContain(SSH_SECRET);
    expect(all).not.toContain(PROMPT_SECRET);
    expect(all).not.toMatch(/^root:/m);
    expect(all).not.toContain('READ ');
    expect(toolResults[0]?.match(/DENIED /g)).toHaveLength(6);
    // KEEL_HOME shows as an empty folder, its audit log not at all
    expect(toolResults[1]).not.toMatch(/keel\.db|audit\.key|\.jsonl/);
    expect(toolResults[2]).toContain('audit-tried');
    expect(toolResults[2]).not.toMatch(/session_start|"hash"/);
  });

  it('no unix socket of the host answers: /run/user, a home, the abstract namespace', () => {
    expect(toolResults[3]?.match(/REFUSED /g)).toHaveLength(3);
    expect(toolResults[3]).not.toContain('CONNECTED');
    for (const l of listeners) expect(l.accepted()).toBe(0);
  });

  it('the private /tmp is size-capped, and a command filling it leaves the host untouched', () => {
    expect(toolResults[4]).toMatch(/No space left on device/);
    expect(toolResults[4]).toMatch(/exit=1/);
    expect(toolResults[4]).toMatch(/tmpfs\s+64\s/);
    expect(existsSync(bigFile)).toBe(false);
  });

  it('keel itself still reads its state: the session is in keel.db', async () => {
    const sessions = await keel(['sessions', 'list', '--json'], {
      cwd: repo,
      home,
      env: { KEEL_HOME: state },
    });
    expect(sessions.stdout).toContain('look around');
  });
});
