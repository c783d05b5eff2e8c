/** Running keel's MCP server until its client (stdio) or a signal (HTTP) ends it. */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { McpContext } from './context.js';
import { type ListenAddress, serveHttp } from './http.js';
import { createMcpServer } from './server.js';

/** Resolves on the first of SIGINT / SIGTERM (a broken stdout is turned into SIGTERM by bin/keel.js). */
function untilSignal(extra?: (stop: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    extra?.(stop);
  });
}

/**
 * MCP over stdin/stdout: stdout carries the protocol only. Returns when the client closes stdin and every
 * request it sent has its answer (`echo REQUESTS | keel mcp` gets them all), or at once on a signal.
 */
export async function serveStdio(ctx: McpContext, version: string): Promise<void> {
  const server = createMcpServer(ctx, version);
  const transport = new StdioServerTransport();
  await server.connect(transport);
  const pending = new Set<string | number>();
  await untilSignal((stop) => {
    let ended = false;
    const received = transport.onmessage;
    transport.onmessage = (message) => {
      if ('method' in message && 'id' in message) pending.add(message.id);
      received?.(message);
    };
    const send = transport.send.bind(transport);
    transport.send = async (message) => {
      await send(message);
      if (!('method' in message) && 'id' in message && message.id !== undefined) pending.delete(message.id);
      if (ended && pending.size === 0) stop();
    };
    const drain = () => {
      ended = true;
      if (pending.size === 0) stop();
    };
    process.stdin.once('end', drain);
    process.stdin.once('close', drain);
    transport.onclose = stop;
  });
  await server.close().catch(() => undefined);
}

/** MCP over Streamable HTTP; `ready` is told the URL once it listens. Returns on SIGINT or SIGTERM. */
export async function serveHttpUntilStopped(
  ctx: McpContext,
  version: string,
  address: ListenAddress,
  token: string,
  ready: (url: string) => void,
): Promise<void> {
  const serving = await serveHttp(address, token, () => createMcpServer(ctx, version));
  ready(serving.url);
  await untilSignal();
  await serving.close();
}
