/**
 * Every tool result passes the one truncation (src/tools/truncate.ts) before the model or the log sees
 * it: an MCP server that answers with 9 MB (as text lines, as one line in an error, as structured
 * content only) reaches neither whole, and a built-in tool's own cut is not cut a second time.
 * Through the real binary, with a fixture MCP server bundled into the repository.
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/tools/truncate.js';
import { chatBodies, keel, keelHome, lastSessionEvents, model, modelFlags } from '../e2e/harness.js';
import { bundleMcpFixture } from '../helpers/mcp-fixtures.js';
import { gitRepo } from '../helpers/tmp.js';

/** A result may pass the caps by its markers, never by more. */
const MAX_RESULT = LIMITS.bytes + 2048;

async function repoWithFlood(): Promise<string> {
  const repo = gitRepo();
  await bundleMcpFixture('flood', join(repo, 'mcp', 'flood.cjs'));
  return repo;
}

describe('tool results are cut in one place', () => {
  it('a 9 MB MCP result (lines, an error line, structured content) reaches neither the model nor keel.db whole; read_file is cut once', async () => {
    const repo = await repoWithFlood();
    // a file read_file cuts itself: long lines and more than its byte window
    writeFileSync(
      join(repo, 'big.txt'),
      `${Array.from({ length: 200 }, (_, i) => `${i}${'z'.repeat(3000)}`).join('\n')}\n`,
    );
    const home = keelHome(
      '[[mcp_servers]]\nname = "fx"\ncommand = ["node", "mcp/flood.cjs"]\nread_only_tools = ["*"]\n',
    );
    const server = await model([
      { tool_calls: [{ name: 'mcp__fx__flood', arguments: {} }] },
      { tool_calls: [{ name: 'mcp__fx__flood_error', arguments: {} }] },
      { tool_calls: [{ name: 'mcp__fx__flood_structured', arguments: {} }] },
      { tool_calls: [{ name: 'read_file', arguments: { path: 'big.txt' } }] },
      { text: 'done' },
    ]);
    const run = await keel(['ask', ...modelFlags(server), '--json', 'flood me'], {
      cwd: repo,
      home,
      timeoutMs: 90_000,
    });
    expect(run.code, run.stderr).toBe(0);

    const results = lastSessionEvents(home)
      .filter((e) => e.type === 'tool_result')
      .map((e) => e.data as { tool: string; output: string; is_error: boolean });
    expect(results.map((r) => r.tool)).toEqual([
      'mcp__fx__flood',
      'mcp__fx__flood_error',
      'mcp__fx__flood_structured',
      'read_file',
    ]);
    for (const r of results) expect(Buffer.byteLength(r.output), r.tool).toBeLessThanOrEqual(MAX_RESULT);
    const [lines, error, structured, read] = results.map((r) => r.output) as [string, string, string, string];
    // head and tail kept, the middle said to be missing
    expect(lines.startsWith('FIRST\nline 0 ')).toBe(true);
    expect(lines.endsWith('\nLAST')).toBe(true);
    expect(lines).toMatch(/\[\.\.\. \d+ bytes omitted \.\.\.\]/);
    expect(results[1]?.is_error).toBe(true);
    expect(error.startsWith('ERReee')).toBe(true);
    expect(error).toContain('[line cut at');
    expect(structured.startsWith('{"rows":["row 0 ')).toBe(true);
    // read_file's own window and marker, and no second cut on top
    expect(read).toContain('[truncated:');
    expect(read).toContain('[line cut at 2000 chars]');
    expect(read).not.toContain('omitted');

    // what the model was sent: the same cut results, nothing of the 9 MB
    const bodies = chatBodies(server);
    expect(bodies).toHaveLength(5);
    for (const body of bodies) expect(JSON.stringify(body).length).toBeLessThan(5 * MAX_RESULT);
    const stored = ['keel.db', 'keel.db-wal']
      .map((f) => join(home, f))
      .filter((f) => existsSync(f))
      .reduce((sum, f) => sum + statSync(f).size, 0);
    expect(stored).toBeLessThan(3 * 1024 * 1024);
  }, 120_000);
});
