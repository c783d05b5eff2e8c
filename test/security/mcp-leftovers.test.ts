/**
 * Issue 24, item 12: an MCP server declared read-only runs unsandboxed, so no pid namespace ends its
 * children with it. Whatever it started, in its own process group or detached into a session of its own,
 * is gone once the session ends.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keel, keelHome, model, modelFlags } from '../e2e/harness.js';
import { bundleMcpFixture } from '../helpers/mcp-fixtures.js';
import { gitRepo } from '../helpers/tmp.js';

/** Whether a pid is a live process (a zombie has ended; it only waits to be reaped). */
function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The pids still running after SIGKILL had time to land (the kernel ends a killed process at once). */
async function survivors(pids: number[]): Promise<number[]> {
  for (let i = 0; i < 50 && pids.some(running); i++) await new Promise((r) => setTimeout(r, 20));
  return pids.filter(running);
}

describe('MCP server leftovers', () => {
  it("a read-only (unsandboxed) server's children, detached or not, end with the session", async () => {
    const repo = gitRepo();
    await bundleMcpFixture('spawner', join(repo, 'mcp/spawner.cjs'));
    const home = keelHome(
      `[[mcp_servers]]\nname = "sp"\ncommand = ["${process.execPath}", "mcp/spawner.cjs"]\nread_only_tools = ["*"]\n`,
    );
    const server = await model([
      { tool_calls: [{ name: 'mcp__sp__ping', arguments: {} }] },
      { text: 'done', expect: { last_tool_result_contains: 'pong' } },
    ]);
    const run = await keel(['ask', ...modelFlags(server), 'ping'], { cwd: repo, home, timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    const pids = readFileSync(join(repo, 'children.txt'), 'utf8').trim().split(' ').map(Number);
    expect(pids).toHaveLength(2);
    const left = await survivors(pids);
    for (const pid of left) process.kill(pid, 'SIGKILL');
    expect(left).toEqual([]);
  }, 90_000);
});
