/** Proof for `keel doctor` that a sandbox holds: a write outside the scope and a network call, both tried. */
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Sandbox } from './sandbox.js';
import { isInside } from './scope.js';

/** What `proveSandbox` observed, for `keel doctor`. */
export interface SandboxProof {
  writeOutsideBlocked: boolean;
  networkBlocked: boolean;
  detail: string;
}

/**
 * Try what the sandbox promises to stop: a write outside the scope (checked on the host, then removed if
 * it landed) and a connection to a loopback port keel opens (host loopback is only reachable with the
 * host's network). Each claim is judged by what keel sees, not by the command's exit code.
 */
export async function proveSandbox(sandbox: Sandbox): Promise<SandboxProof> {
  const signal = new AbortController().signal;
  const target = outsideTarget(sandbox);
  const quoted = `'${target.replace(/'/g, `'\\''`)}'`;
  const write = await sandbox.run(`echo keel > ${quoted}`, { timeoutS: 10, signal });
  const landed = existsSync(target);
  if (landed) rmSync(target, { force: true });
  const writeDetail = landed
    ? `a write to ${target} succeeded (removed again)`
    : write.exitCode === 0
      ? `a write to ${target} never reached the host (it landed in the sandbox's own private copy)`
      : `a write to ${target} was refused: ${firstLine(write.stderr) || `exit code ${write.exitCode}`}`;
  const net = sandbox.kind === 'docker' ? await proveDockerNetwork(sandbox) : await proveLoopback(sandbox);
  return {
    writeOutsideBlocked: !landed,
    networkBlocked: net.blocked,
    detail: `${writeDetail}; ${net.detail}`,
  };
}

function outsideTarget(sandbox: Sandbox): string {
  const name = `.keel-sandbox-probe-${randomBytes(6).toString('hex')}`;
  const candidates = [dirname(sandbox.root), tmpdir(), '/usr', '/var/tmp'];
  const outside = candidates.find(
    (dir) => !sandbox.writable.some((w) => isInside(dir, w)) && existsSync(dir),
  );
  return join(outside ?? '/', name);
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

const CONNECT_SCRIPT = `const s=require('net').connect(Number(process.argv[1]),'127.0.0.1');
s.on('connect',()=>{console.log('KEEL_NET_OK');s.destroy()});
s.on('error',(e)=>console.log('KEEL_NET_ERR '+e.code));
setTimeout(()=>{console.log('KEEL_NET_ERR timeout');process.exit(0)},3000).unref();`;

async function proveLoopback(sandbox: Sandbox): Promise<{ blocked: boolean; detail: string }> {
  let accepted = false;
  const server = createServer((socket) => {
    accepted = true;
    socket.on('error', () => {});
    socket.destroy();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  try {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const result = await sandbox.run([process.execPath, '-e', CONNECT_SCRIPT, String(port)], {
      timeoutS: 15,
      signal: new AbortController().signal,
    });
    const said = result.stdout.match(/KEEL_NET_\w+( \w+)?/)?.[0];
    if (accepted)
      return { blocked: false, detail: `a connection to 127.0.0.1:${port} on the host got through` };
    // no verdict from the probe (node missing inside?): claim nothing
    if (!said?.startsWith('KEEL_NET_ERR')) {
      const why = firstLine(result.stderr) || `exit code ${result.exitCode}`;
      return { blocked: false, detail: `the network probe did not run (${why}); network isolation unproven` };
    }
    return {
      blocked: true,
      detail: `a connection to 127.0.0.1:${port} on the host failed (${said.slice(13)})`,
    };
  } finally {
    server.close();
  }
}

// The container never shares the host's loopback, so look for any interface besides lo instead
async function proveDockerNetwork(sandbox: Sandbox): Promise<{ blocked: boolean; detail: string }> {
  const result = await sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", {
    timeoutS: 15,
    signal: new AbortController().signal,
  });
  const interfaces = result.stdout.split('\n').filter((i) => i !== '' && i !== 'lo');
  if (result.exitCode !== 0) return { blocked: false, detail: 'the network probe did not run; unproven' };
  if (interfaces.length > 0)
    return { blocked: false, detail: `network interfaces inside: ${interfaces.join(', ')}` };
  return { blocked: true, detail: 'only the loopback interface exists inside the container' };
}
