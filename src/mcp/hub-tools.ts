/** hub_peers, hub_send, hub_inbox, hub_reply, hub_await: the session's hub tools (tools/hub.ts), served over MCP. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { HUB_TOOLS, type HubCaller, hubErrorText } from '../tools/hub.js';
import { McpToolError } from './context.js';
import { guarded, jsonResult } from './tool-result.js';

export function registerHubTools(server: McpServer, caller: HubCaller): void {
  for (const spec of HUB_TOOLS)
    server.registerTool(
      spec.name,
      {
        description: spec.description,
        inputSchema: spec.schema.strict(),
        // sending and replying reach another agent; the rest only read
        annotations: { readOnlyHint: spec.effect === 'read', openWorldHint: true },
      },
      (args: Record<string, unknown>) =>
        guarded(spec.name, async () => {
          try {
            return jsonResult(await spec.run(args as never, caller));
          } catch (err) {
            throw new McpToolError(hubErrorText(err));
          }
        }),
    );
}
