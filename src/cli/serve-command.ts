/** `keel serve`: the HTTP API (sessions, approvals, SSE events, fix runs, memory) and the web workspace. */
import type { Command } from 'commander';
import { EXIT } from './exit-codes.js';
import type { CommonFlags } from './options.js';

export interface ServeFlags extends CommonFlags {
  listen: string;
  approvalTimeout: number;
}

/** Register the verb; the server's code loads only when it runs. */
export function registerServe(program: Command, setExit: (code: number) => void): void {
  program
    .command('serve')
    .description('serve the HTTP API and the web workspace for this project (loopback by default)')
    .option('--listen <host:port>', 'address to listen on (port 0: a free one)', '127.0.0.1:7430')
    .option('-C, --cwd <dir>', 'workspace folder (default: the current folder)')
    .option(
      '--approval-timeout <s>',
      'seconds a question waits for an answer before it is denied',
      (v) => {
        const n = Number.parseInt(v, 10);
        if (!Number.isFinite(n) || n <= 0)
          throw new Error(`--approval-timeout: ${v} is not a positive number`);
        return n;
      },
      600,
    )
    .option('--provider <name>', 'openai | ollama | scripted')
    .option('--model <name>', 'model name as the server knows it')
    .option('--base-url <url>', 'model server URL')
    .option('--script <file>', 'script file for the scripted provider')
    .option('--context-window <n>', 'context window in tokens', (v) => Number.parseInt(v, 10))
    .option('--json', 'print {"url","port","token"} on stdout when ready')
    .action(async (opts: ServeFlags) => {
      setExit(await runServe(opts));
    });
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export async function runServe(flags: ServeFlags): Promise<number> {
  const { inertLine } = await import('./inert.js');
  const fail = (code: string, exit: number, message: string): number => {
    if (flags.json) process.stdout.write(`${JSON.stringify({ code, exit_code: exit, error: message })}\n`);
    else process.stderr.write(`keel: ${inertLine(message)}\n`);
    return exit;
  };
  const m = /^(.*):(\d+)$/.exec(flags.listen);
  if (!m) return fail('CONFIG_ERROR', EXIT.usage, `--listen ${flags.listen}: expected HOST:PORT`);
  const host = (m[1] ?? '').replace(/^\[(.*)\]$/, '$1');
  const wantPort = Number(m[2]);
  const loopback = LOOPBACK.has(host) || LOOPBACK.has(m[1] ?? '');
  const envToken = process.env.KEEL_SERVE_TOKEN;
  if (!loopback && !envToken)
    return fail(
      'CONFIG_ERROR',
      EXIT.usage,
      `keel serve: listening on ${flags.listen} (not loopback) needs KEEL_SERVE_TOKEN set`,
    );

  const { load, ConfigError } = await import('./options.js');
  let setup: ReturnType<typeof load>;
  try {
    setup = load(flags);
  } catch (err) {
    if (err instanceof ConfigError) return fail('CONFIG_ERROR', EXIT.usage, err.message);
    throw err;
  }
  const { randomBytes } = await import('node:crypto');
  const token = envToken ?? randomBytes(24).toString('base64url');
  const { SessionManager } = await import('../server/sessions.js');
  const { createApp, countToolCall } = await import('../server/app.js');
  const { serve } = await import('@hono/node-server');
  const { agentTools } = await import('../agent/subagents.js');
  const { graphTools } = await import('../graph/tools.js');
  const { memoryTools } = await import('../memory/tools.js');

  const manager = new SessionManager({
    cwd: setup.cwd,
    loaded: setup.loaded,
    approvalTimeoutS: flags.approvalTimeout,
    tools: [agentTools, graphTools, memoryTools],
    onToolCall: countToolCall,
  });
  let port = wantPort;
  const { packageRoot } = await import('./package-root.js');
  const { join } = await import('node:path');
  const app = createApp({
    manager,
    token,
    port: () => port,
    tokenForAll: !loopback,
    webRoot: join(packageRoot(), 'dist', 'web'),
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: wantPort }, (info) => {
      port = info.port;
      resolve(s);
    });
    s.once('error', reject);
  }).catch((err: NodeJS.ErrnoException) => err);
  if (server instanceof Error)
    return fail(
      'ENVIRONMENT_ERROR',
      EXIT.environment,
      `keel serve: cannot listen on ${flags.listen}: ${server.message}`,
    );

  const shown = host.includes(':') ? `[${host}]` : host;
  const url = `http://${shown}:${port}/`;
  process.stderr.write(`keel serve: listening on ${url}#token=${token}\n`);
  if (flags.json) process.stdout.write(`${JSON.stringify({ url, port, token })}\n`);

  return new Promise<number>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      void manager.shutdown().finally(() => {
        server.close();
        resolve(EXIT.ok);
      });
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
