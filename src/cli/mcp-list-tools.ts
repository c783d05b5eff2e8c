/** `keel mcp list-tools NAME`: connect to a configured MCP server and show the tools a session would get. */
import { Command } from 'commander';
import { closest } from '../config/closest.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { reportError } from './errors.js';
import { dim, red } from './render.js';

interface ListFlags {
  cwd?: string;
  json?: boolean;
}

async function listTools(name: string, flags: ListFlags): Promise<number> {
  // the config (zod) and the MCP client load only when this verb runs: main.ts builds this command for every verb
  const { ConfigError, load } = await import('../term/options.js');
  let setup: ReturnType<typeof load>;
  try {
    setup = load(flags);
  } catch (err) {
    if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    throw err;
  }
  const { config, warnings } = setup.loaded;
  if (!flags.json)
    for (const w of warnings) process.stderr.write(`${red('keel: warning:')} ${inertLine(w)}\n`);
  const server = config.mcp_servers.find((s) => s.name === name);
  if (!server) {
    const names = config.mcp_servers.map((s) => s.name);
    const near = closest(name, names);
    const known = names.length
      ? `configured: ${names.join(', ')}`
      : 'none is configured ([[mcp_servers]] in keel.toml)';
    return reportError(
      flags.json,
      'CONFIG_ERROR',
      `no MCP server named "${name}"${near ? ` (did you mean "${near}"?)` : ''}; ${known}`,
    );
  }
  const { listServerTools, McpServerError, toolRows } = await import('../tools/mcp.js');
  const { realpathSync } = await import('node:fs');
  // listing only reads: a sandboxed server sees the workspace read-only
  const root = realpathSync.native(setup.cwd);
  try {
    const tools = await listServerTools(server, {
      config,
      env: process.env,
      root,
      programs: setup.loaded.programs ?? [],
      pluginServers: setup.loaded.pluginServers ?? [],
    });
    const rows = toolRows(server, tools);
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ server: server.name, tools: rows }, null, 2)}\n`);
      return EXIT.ok;
    }
    if (rows.length === 0) process.stdout.write(`${dim(`mcp server "${server.name}" offers no tools`)}\n`);
    const width = Math.max(0, ...rows.map((r) => r.name.length));
    for (const r of rows)
      process.stdout.write(
        `${inertLine(r.name.padEnd(width))}  ${r.effect.padEnd(4)}  ${inertLine(r.description)}\n`,
      );
    return EXIT.ok;
  } catch (err) {
    if (err instanceof McpServerError) return reportError(flags.json, 'ENVIRONMENT_ERROR', err.message);
    throw err;
  }
}

/** The `list-tools` verb, for `keel mcp` to add; `setExit` is buildProgram's (main returns its status). */
export function listToolsCommand(
  setExit: (code: number) => void = (code) => {
    process.exitCode = code;
  },
): Command {
  return new Command('list-tools')
    .description(
      'connect to a configured MCP server and show its tools as keel offers them (name, effect, description)',
    )
    .argument('<name>', 'the name of an [[mcp_servers]] entry')
    .option('-C, --cwd <dir>', 'the project folder (default: the current folder)')
    .option('--json', 'print one JSON document')
    .action(async (name: string, opts: ListFlags) => {
      setExit(await listTools(name, opts));
    });
}
