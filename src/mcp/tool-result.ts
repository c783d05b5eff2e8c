/** How keel's MCP tools answer: a JSON document (text for the model, structured for the client), or a tool error. */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { McpToolError } from './context.js';

/** A successful answer: the document as compact JSON text and as structured content. */
export function jsonResult(doc: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(doc) }], structuredContent: doc };
}

/** A plain-text answer (the repo map is read as text). */
export function textResult(text: string, doc: Record<string, unknown> = {}): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: { ...doc, text } };
}

/**
 * Run a tool's body; whatever it throws becomes a tool error (isError) naming the tool, never a crashed
 * server or a stack: a refusal says why, anything else what failed.
 */
export async function guarded(tool: string, run: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await run();
  } catch (err) {
    const message = err instanceof McpToolError ? err.message : `failed: ${(err as Error).message}`;
    return { content: [{ type: 'text', text: `${tool}: ${message}` }], isError: true };
  }
}
