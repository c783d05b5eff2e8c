/**
 * `keel mcp`: keel as an MCP server for other agents, over stdio (the default) or Streamable HTTP
 * (`--http 127.0.0.1:PORT`, bearer token always required). The server is loaded only when it runs.
 */
import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { Command } from 'commander';
import { EXIT } from '../term/exit-codes.js';
import { reportError } from './errors.js';

export interface McpFlags {
  cwd?: string;
  http?: string;
}

/** The shortest KEEL_MCP_TOKEN accepted: a token someone can guess protects nothing. */
const MIN_TOKEN = 16;

/**
 * The `mcp` command, whose default action serves; subcommands (`mcp list-tools`) can be added to it.
 * `setExit` receives the exit status (as main.ts's verbs do).
 */
export function mcpCommand(
  setExit: (code: number) => void = (code) => {
    process.exitCode = code;
  },
): Command {
  return new Command('mcp')
    .description(
      "serve this project's memory, code graph, repo map and session status to MCP clients (stdio, or --http)",
    )
    .option('-C, --cwd <dir>', 'the project folder (default: the current folder)')
    .option(
      '--http <host:port>',
      'serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0: any free one); a bearer token is required: KEEL_MCP_TOKEN, else one is generated and printed',
    )
    .action(async (opts: McpFlags) => {
      setExit(await runMcp(opts));
    });
}

/** Serve until the client goes (stdio) or a signal comes (HTTP); the exit status. */
export async function runMcp(flags: McpFlags, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const usage = (message: string) => reportError(false, 'CONFIG_ERROR', `keel mcp: ${message}`);
  const { isLoopback, parseListen } = await import('../mcp/http.js');
  const address = flags.http === undefined ? undefined : parseListen(flags.http);
  if (flags.http !== undefined && !address)
    return usage(`--http ${flags.http} is not HOST:PORT (like 127.0.0.1:8765, [::1]:0)`);
  const given = env.KEEL_MCP_TOKEN;
  if (address && given !== undefined && given.trim().length < MIN_TOKEN)
    return usage(`KEEL_MCP_TOKEN is shorter than ${MIN_TOKEN} characters`);
  if (address && !isLoopback(address.host) && given === undefined)
    return usage(
      `refusing to serve on ${flags.http}, off loopback, without KEEL_MCP_TOKEN set (set it to a long random secret)`,
    );

  const { ConfigError, load } = await import('../term/options.js');
  const { openContext } = await import('../mcp/context.js');
  const { keelVersion } = await import('../config/package-root.js');
  let ctx: import('../mcp/context.js').McpContext;
  try {
    const { cwd, loaded } = load({ ...(flags.cwd ? { cwd: flags.cwd } : {}) });
    ctx = openContext(realpathSync.native(cwd), loaded.config, env);
  } catch (err) {
    if (err instanceof ConfigError) return reportError(false, 'CONFIG_ERROR', err.message);
    throw err;
  }
  try {
    const serve = await import('../mcp/serve.js');
    if (!address) {
      process.stderr.write(`keel mcp: serving ${ctx.root} over stdio\n`);
      await serve.serveStdio(ctx, keelVersion());
      return EXIT.ok;
    }
    const token = given?.trim() ?? randomBytes(24).toString('base64url');
    try {
      await serve.serveHttpUntilStopped(ctx, keelVersion(), address, token, (url) => {
        if (given === undefined) process.stderr.write(`token: ${token}\n`);
        process.stderr.write(`keel mcp: listening on ${url}\n`);
      });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EADDRINUSE' || e.code === 'EADDRNOTAVAIL' || e.code === 'EACCES')
        return reportError(false, 'ENVIRONMENT_ERROR', `keel mcp: cannot listen on ${flags.http}: ${e.code}`);
      throw err;
    }
    return EXIT.ok;
  } finally {
    ctx.close();
  }
}
