import { describe, expect, it } from 'vitest';
import { classifyChanges } from '../../src/config/narrowing.js';
import { configSchema, mcpServerSchema } from '../../src/config/schema.js';
import { mcpEffect, mcpToolName, resultText, shortDescription } from '../../src/tools/mcp-tool.js';

const server = (extra: Record<string, unknown> = {}) =>
  mcpServerSchema.parse({ name: 'fx', command: ['node', 'x.js'], ...extra });

describe('MCP tools as keel sees them', () => {
  it('keeps the first sentence of a description, at most 200 characters', () => {
    expect(shortDescription('Search the docs. Returns up to ten hits.\nMore text.')).toBe('Search the docs.');
    expect(shortDescription('  Version 1.2 of the api.  ')).toBe('Version 1.2 of the api.');
    expect(shortDescription(undefined)).toBe('');
    const long = shortDescription(`${'word '.repeat(100)}end.`);
    expect(long.length).toBe(200);
    expect(long.endsWith('…')).toBe(true);
  });

  it('names a tool mcp__<server>__<tool> only when a provider accepts the name', () => {
    expect(mcpToolName('fx', 'echo')).toBe('mcp__fx__echo');
    expect(mcpToolName('fx', 'bad name')).toBeUndefined();
    expect(mcpToolName('fx', 'x'.repeat(60))).toBeUndefined();
  });

  it('is exec unless declared read-only, by name or with "*"', () => {
    expect(mcpEffect(server(), 'echo')).toBe('exec');
    expect(mcpEffect(server({ read_only_tools: ['echo'] }), 'echo')).toBe('read');
    expect(mcpEffect(server({ read_only_tools: ['echo'] }), 'write')).toBe('exec');
    expect(mcpEffect(server({ read_only_tools: ['*'] }), 'write')).toBe('read');
  });

  it('turns content into text, naming parts that are not text', () => {
    expect(
      resultText({
        content: [
          { type: 'text', text: 'one' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
          { type: 'resource', resource: { uri: 'file:///a', text: 'inline' } },
        ],
      }),
    ).toBe('one\n[image image/png]\ninline');
    expect(resultText({ content: [], structuredContent: { n: 1 } })).toBe('{"n":1}');
  });

  it('refuses a server with both command and url, or neither, or a token without a url', () => {
    expect(
      mcpServerSchema.safeParse({ name: 'a', command: ['x'], url: 'http://127.0.0.1:1/mcp' }).success,
    ).toBe(false);
    expect(mcpServerSchema.safeParse({ name: 'a' }).success).toBe(false);
    expect(mcpServerSchema.safeParse({ name: 'a', command: ['x'], bearer_token_env: 'T' }).success).toBe(
      false,
    );
    expect(mcpServerSchema.safeParse({ name: 'A b', command: ['x'] }).success).toBe(false);
    expect(server()).toMatchObject({
      startup_timeout_s: 10,
      tool_timeout_s: 60,
      read_only_tools: [],
      env: {},
    });
  });

  it('a new or changed server widens trust, one removed narrows it; a name twice is refused', () => {
    const a = { name: 'a', command: ['x'] };
    const b = { name: 'b', url: 'http://127.0.0.1:9/mcp' };
    const kinds = (before: unknown[], after: unknown[]) =>
      classifyChanges({ mcp_servers: before }, { mcp_servers: after }, '/').map((c) => c.kind);
    expect(kinds([a], [a, b])).toEqual(['expansion']);
    expect(kinds([a, b], [a])).toEqual(['narrowing']);
    expect(kinds([a], [{ ...a, read_only_tools: ['*'] }])).toContain('expansion');
    expect(configSchema.safeParse({ mcp_servers: [a, a] }).success).toBe(false);
  });
});
