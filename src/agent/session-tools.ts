/**
 * The tools a person's session gets beside the built-in ones (subagents, the code graph, memory, MCP
 * servers, A2A agents and the hub when configured or named): one list for `keel ask|plan|edit|run`, each turn of
 * `keel chat` and a hub worker's sessions.
 */
import type { ToolFactory } from '../tools/types.js';
import { agentTools } from './subagents.js';
import type { SessionToolFactory } from './tool-deps.js';

export async function sessionTools(
  warn: (line: string) => void,
): Promise<Array<SessionToolFactory | ToolFactory>> {
  const [{ graphTools }, { memoryTools }] = await Promise.all([
    import('../graph/tools.js'),
    import('../memory/tools.js'),
  ]);
  return [
    agentTools,
    graphTools,
    memoryTools,
    mcpToolsWhenConfigured(warn),
    // A2A agents are loaded only when configured, as the MCP client is
    async (deps: Parameters<ToolFactory>[0]) =>
      deps.loaded.config.a2a_agents.length === 0 ? [] : (await import('../tools/a2a.js')).a2aTools(deps),
    hubToolsWhenNamed,
  ];
}

/**
 * The configured MCP servers' tools: the MCP client (and its JSON-schema checker) is loaded only when a server
 * is configured.
 */
function mcpToolsWhenConfigured(warn: (line: string) => void): ToolFactory {
  return async (deps) =>
    deps.loaded.config.mcp_servers.length === 0 ? [] : (await import('../tools/mcp.js')).mcpTools(warn)(deps);
}

/**
 * hub_* only when the environment names a hub (KEEL_HUB_URL, KEEL_HUB_TOKEN, KEEL_AGENT_NAME; hubTools checks
 * all three): without a URL there is nothing to load.
 */
const hubToolsWhenNamed: ToolFactory = async (deps) =>
  deps.env.KEEL_HUB_URL?.trim() ? (await import('../tools/hub.js')).hubTools(deps) : [];
