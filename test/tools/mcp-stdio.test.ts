import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GroupStdioTransport } from '../../src/tools/mcp-stdio.js';
import { tempDir } from '../helpers/tmp.js';

function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

describe('GroupStdioTransport', () => {
  it('close ends the server and the children in its process group, with no cgroup involved', async () => {
    const dir = tempDir();
    // the "server" starts a child in its group and then ignores stdin closing and SIGTERM
    const script = "trap '' TERM; sleep 1000 & echo $! > child; echo $$ > self; while :; do sleep 1; done";
    const transport = new GroupStdioTransport({
      command: '/bin/sh',
      args: ['-c', script],
      env: {},
      cwd: dir,
    });
    await transport.start();
    let pids: number[] = [];
    for (let i = 0; i < 100 && pids.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 20));
      try {
        pids = ['self', 'child'].map((f) => Number(readFileSync(join(dir, f), 'utf8')));
      } catch {
        pids = [];
      }
    }
    expect(pids).toHaveLength(2);
    expect(pids[0]).toBe(transport.pid);
    await transport.close();
    for (let i = 0; i < 50 && pids.some(running); i++) await new Promise((r) => setTimeout(r, 20));
    expect(pids.filter(running)).toEqual([]);
  }, 20_000);
});
