/** An MCP server's tool as a keel tool: `mcp__<server>__<tool>`, its schema, a short description, an effect. */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import type { McpServerConfig } from '../config/schema.js';
import type { Effect } from '../policy/effects.js';
import { type McpConnection, McpServerError } from './mcp-connect.js';
import type { Tool, ToolResult } from './types.js';

/** What a server says about one of its tools (the part keel reads). */
export interface ListedTool {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
}

/** Providers take function names of letters, digits, `_` and `-`, at most 64 characters. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The name the model sees, or undefined when the server's name cannot be one. */
export function mcpToolName(server: string, tool: string): string | undefined {
  const name = `mcp__${server}__${tool}`;
  return TOOL_NAME.test(tool) && name.length <= 64 ? name : undefined;
}

/** `exec` unless the config declares the tool read-only (`["*"]`: every tool of the server). */
export function mcpEffect(server: McpServerConfig, tool: string): Effect {
  return server.read_only_tools.includes('*') || server.read_only_tools.includes(tool) ? 'read' : 'exec';
}

const MAX_DESCRIPTION = 200;

/** The first sentence, at most 200 characters: every tool's description is in every request. */
export function shortDescription(text: string | undefined): string {
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  const sentence = /^.*?[.!?](?=\s|$)/.exec(flat)?.[0] ?? flat;
  return sentence.length <= MAX_DESCRIPTION
    ? sentence
    : `${sentence.slice(0, MAX_DESCRIPTION - 1).trimEnd()}…`;
}

/** The server's input schema as zod (so the registry sends it back as JSON Schema); any object when it cannot be read. */
function inputSchema(schema: Record<string, unknown>): z.ZodType {
  try {
    return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    return z.record(z.string(), z.unknown());
  }
}

/** The keel tool that calls `listed` on `conn`; every failure is a tool error result naming the server. */
export function mcpTool(conn: McpConnection, listed: ListedTool, name: string): Tool {
  const server = conn.server;
  return {
    name,
    description: shortDescription(listed.description) || `${listed.name} (from MCP server ${server.name})`,
    effect: mcpEffect(server, listed.name),
    schema: inputSchema(listed.inputSchema),
    async execute(args, ctx): Promise<ToolResult> {
      try {
        const result = await conn.guard(
          conn.client.callTool({ name: listed.name, arguments: args as Record<string, unknown> }, undefined, {
            timeout: server.tool_timeout_s * 1000,
            signal: ctx.signal,
          }),
        );
        return { output: resultText(result), ...(result.isError === true ? { isError: true } : {}) };
      } catch (err) {
        if (ctx.signal.aborted)
          return { output: `the call to mcp server "${server.name}" was cancelled`, isError: true };
        return { output: failure(server, err), isError: true };
      }
    },
  };
}

/** A call's content as text: text parts as they are, other parts named. */
export function resultText(result: {
  content?: unknown;
  structuredContent?: unknown;
  toolResult?: unknown;
}): string {
  const parts = Array.isArray(result.content) ? (result.content as Array<Record<string, unknown>>) : [];
  const texts = parts.map((part) => {
    if (part.type === 'text' && typeof part.text === 'string') return part.text;
    const resource = part.resource as { text?: unknown; uri?: unknown } | undefined;
    if (part.type === 'resource' && typeof resource?.text === 'string') return resource.text;
    if (part.type === 'resource_link' || part.type === 'resource')
      return `[resource ${String(part.uri ?? resource?.uri ?? '')}]`;
    return `[${String(part.type)} ${String(part.mimeType ?? '')}]`.replace(' ]', ']');
  });
  if (texts.length === 0 && result.structuredContent !== undefined)
    return JSON.stringify(result.structuredContent);
  // servers of the protocol's first version answered with `toolResult`
  if (texts.length === 0 && result.toolResult !== undefined) return JSON.stringify(result.toolResult);
  return texts.join('\n');
}

function failure(server: McpServerConfig, err: unknown): string {
  if (err instanceof McpServerError) return err.message;
  const message = err instanceof Error ? err.message.replace(/\s+/g, ' ').trim().slice(0, 300) : String(err);
  if (err instanceof McpError && err.code === ErrorCode.RequestTimeout)
    return `mcp server "${server.name}" did not answer within ${server.tool_timeout_s} s (tool_timeout_s)`;
  if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed)
    return `mcp server "${server.name}" crashed: ${message}`;
  if (err instanceof McpError) return `mcp server "${server.name}" refused the call: ${message}`;
  // the SDK checks the result against the protocol's schema: what fails it is no answer
  return `mcp server "${server.name}" returned garbage: ${message}`;
}
