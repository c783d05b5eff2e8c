/** A subagent can never be handed more than its parent has: the gate denies a wider request, through the real binary. */
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  chatBodies,
  keel,
  keelHome,
  model,
  modelFlags,
  requestMessages,
  withEventLog,
} from '../e2e/harness.js';
import { gitRepo } from '../helpers/tmp.js';

const call = (name: string, args: Record<string, unknown>, id?: string) => ({
  name,
  arguments: args,
  ...(id ? { id } : {}),
});

const sessions = (home: string) => withEventLog(home, (log) => log.listSessions(50));
const eventsOf = (home: string, id: string) => withEventLog(home, (log) => log.events(id));
const bodiesFor = (server: Parameters<typeof chatBodies>[0], task: string) =>
  chatBodies(server).filter((b) =>
    String(requestMessages(b).find((m) => m.role === 'user')?.content ?? '').includes(task),
  );

describe('subagents cannot widen their parent', () => {
  it('a child asking for a wider mode, scope or network than its parent is denied by the gate', async () => {
    const repo = gitRepo({ 'src/a.txt': 'a\n' });
    // a link inside the parent's scope that points out of it: compared canonical, it is outside
    symlinkSync('..', join(repo, 'src', 'up'));
    const home = keelHome('scope = ["src"]\n');
    const server = await model([
      {
        task: 'PARENT',
        tool_calls: [
          call('spawn_agent', { task: 'CHILD auto', mode: 'auto' }, 'c_mode'),
          call('spawn_agent', { task: 'CHILD root', scope: ['.'] }, 'c_scope'),
          call('spawn_agent', { task: 'CHILD link', scope: ['src/up'] }, 'c_link'),
          call('spawn_agent', { task: 'CHILD net', network: true }, 'c_net'),
        ],
      },
      { task: 'PARENT', text: 'all refused' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'PARENT: try to widen'], {
      cwd: repo,
      home,
    });
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout);
    const denies = eventsOf(home, doc.session_id).filter(
      (e) => e.type === 'gate_decision' && e.data.decision === 'deny',
    );
    // each call under keel's own id, in order (the model's c_mode... go back only on the wire)
    expect(denies.map((e) => [e.data.call_id, e.data.deny])).toEqual([
      ['c1', 'policy'],
      ['c2', 'policy'],
      ['c3', 'policy'],
      ['c4', 'policy'],
    ]);
    expect(String(denies[0]?.data.reason)).toContain('mode auto is wider');
    expect(String(denies[1]?.data.reason)).toContain('outside this session');
    expect(String(denies[2]?.data.reason)).toContain('outside this session');
    expect(String(denies[3]?.data.reason)).toContain('network');
    // nothing was started
    expect(sessions(home).filter((s) => s.parent_id === doc.session_id)).toEqual([]);
    expect(bodiesFor(server, 'CHILD')).toEqual([]);
  });
});
