/** keel as an MCP server: one McpServer per client connection, all reading the same project context. */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpContext } from './context.js';
import { registerGraphTools } from './graph-tools.js';
import { registerHubTools } from './hub-tools.js';
import { registerMemoryTools } from './memory-tools.js';
import { registerStatusTools } from './status-tools.js';

const INSTRUCTIONS =
  "keel's memory of this project, its code graph and repo map, and the state of keel's sessions and runs. " +
  'Everything is read-only except memory_add (and hub_send, hub_reply when a hub is configured). Paths are relative to the project root.';

/** A server exposing keel's tools over `ctx`; connect it to one transport. */
export function createMcpServer(ctx: McpContext, version: string): McpServer {
  const server = new McpServer(
    { name: 'keel', version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  registerMemoryTools(server, ctx);
  registerGraphTools(server, ctx);
  registerStatusTools(server, ctx);
  if (ctx.hub) registerHubTools(server, ctx.hub);
  return server;
}
