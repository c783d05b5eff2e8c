/**
 * `keel doctor`'s line per configured MCP server: does it start here, and if not, why (its exit and last
 * words on stderr, or what keel refused). Each server is started as `keel mcp list-tools` starts it, and stopped.
 */
import { realpathSync } from 'node:fs';
import type { LoadedConfig } from '../config/load.js';
import { pluginOf } from '../config/plugins.js';

export interface McpCheck {
  name: string;
  status: 'ok' | 'warn';
  detail: string;
}

/** One check per `[[mcp_servers]]` entry, in config order; a server that does not start is a warning (sessions skip it). */
export async function checkMcpServers(cwd: string, loaded: LoadedConfig): Promise<McpCheck[]> {
  const { config } = loaded;
  if (config.mcp_servers.length === 0) return [];
  const { listServerTools, McpServerError, allReadOnly } = await import('../tools/mcp.js');
  const root = realpathSync.native(cwd);
  const checks: McpCheck[] = [];
  for (const server of config.mcp_servers) {
    const name = `mcp ${server.name}`;
    try {
      const tools = await listServerTools(server, {
        config,
        env: process.env,
        root,
        programs: loaded.programs ?? [],
        pluginServers: loaded.pluginServers ?? [],
      });
      const plugin = pluginOf(server, loaded.pluginServers ?? []);
      const where = server.url
        ? `at ${server.url}`
        : plugin
          ? `in the sandbox (from plugin ${plugin.plugin}, its folder read-only)`
          : server.sandbox === 'none'
            ? `unsandboxed (sandbox = "none" in ${loaded.sources.mcp_servers ?? 'the config'})`
            : allReadOnly(server)
              ? 'unsandboxed (read_only_tools = ["*"])'
              : 'in the sandbox';
      const count = `${tools.length} tool${tools.length === 1 ? '' : 's'}`;
      checks.push({ name, status: 'ok', detail: `starts ${where}; ${count}` });
    } catch (err) {
      if (!(err instanceof McpServerError)) throw err;
      checks.push({ name, status: 'warn', detail: `${err.message}; sessions leave its tools out` });
    }
  }
  return checks;
}
