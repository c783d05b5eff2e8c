/**
 * Chat's /permissions through the real binary in a tmux pane: the rules in force, a "never" rule and an
 * "always allow" rule saved to the user's config and in force from the next call (the host gate denies
 * the never, however the command is wrapped; the allowed one runs sandboxed without keel's question, and
 * any other command is still asked), and a project rule that waits for trust and shows in
 * `keel trust diff`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { keel, keelHome, lastSessionEvents, model, modelFlags } from './harness.js';
import { Pane } from './pane.js';

const IDLE = /^(?![\s\S]*working · Ctrl\+C stops)/;
const shell = (command: string) => ({ name: 'shell', arguments: { command } });

describe('keel chat: /permissions', () => {
  it('lists the rules, saves never and always-allow rules to the user config, the gate enforces them, and a project rule waits for trust', async () => {
    const server = await model([
      {
        tool_calls: [
          shell('git push origin main'),
          shell('cd . && /usr/bin/git "push" --force'),
          shell('echo allowed-run'),
          shell('echo asked-run'),
        ],
      },
      { text: 'all tried' },
    ]);
    const repo = gitRepo({ 'README.md': '# demo\n' });
    // keel asks before every command: an allow rule is what skips that question
    const home = keelHome('approvals = "shell"\n');
    const pane = Pane.start(['chat', '--mode', 'edit', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(/ctx \d/);

    pane.type('/permissions', 'Enter');
    const empty = await pane.waitFor(/never\s+\(none\)/);
    expect(empty).toMatch(/approvals\s+shell/);
    expect(empty).toMatch(/allow\s+\(none\)/);

    pane.type('/permissions never git push', 'Enter');
    await pane.waitFor(`never \`git push\`: saved to ${join(home, 'config.toml')}`);
    pane.type('/permissions allow echo allowed-run', 'Enter');
    await pane.waitFor(`always allow \`echo allowed-run\`: saved to ${join(home, 'config.toml')}`);
    pane.type('/permissions allow --project echo project-run', 'Enter');
    await pane.waitFor(`always allow \`echo project-run\`: saved to ${join(repo, 'keel.toml')}`);
    await pane.waitFor('not in force until you trust the project config');
    pane.type('/permissions', 'Enter');
    const listed = await pane.waitFor(/waiting\s+`echo project-run`/);
    expect(listed).toMatch(/allow\s+`echo allowed-run`/);
    expect(listed).toMatch(/never\s+`git push`/);

    // the user's config keeps what it had and gains the rules
    const saved = parse(readFileSync(join(home, 'config.toml'), 'utf8'));
    expect(saved).toEqual({
      approvals: 'shell',
      allow_commands: ['echo allowed-run'],
      deny_commands: ['git push'],
    });

    pane.type('push it', 'Enter');
    // the allowed command runs without a question; the next one is asked, and refused here
    await pane.waitFor('keel asks');
    await pane.waitFor('then Enter');
    expect(pane.screen()).toContain('echo asked-run');
    pane.type('n', 'Enter');
    await pane.waitFor('all tried');
    await pane.waitFor(IDLE);

    const events = lastSessionEvents(home);
    const decisions = events
      .filter((e) => e.type === 'gate_decision')
      .map((e) => e.data as { call_id: string; decision: string; deny?: string; reason?: string });
    const starts = events
      .filter((e) => e.type === 'tool_start')
      .map((e) => e.data as { call_id: string; args: { command: string }; sandboxed?: boolean });
    const answer = events.find((e) => e.type === 'assistant_message')?.data as {
      tool_calls: Array<{ id: string; arguments: string }>;
    };
    const callOf = (command: string) =>
      answer.tool_calls.find((c) => JSON.parse(c.arguments).command === command)?.id;
    for (const push of ['git push origin main', 'cd . && /usr/bin/git "push" --force']) {
      const last = decisions.filter((d) => d.call_id === callOf(push)).at(-1);
      expect(last).toMatchObject({ decision: 'deny', deny: 'policy' });
      expect(last?.reason).toContain('"git push", which deny_commands says never to run');
      expect(starts.some((s) => s.call_id === callOf(push))).toBe(false);
    }
    const allowed = starts.find((s) => s.call_id === callOf('echo allowed-run'));
    expect(allowed?.sandboxed).toBe(true);
    expect(decisions.filter((d) => d.call_id === callOf('echo allowed-run')).map((d) => d.decision)).toEqual([
      'allow',
    ]);
    expect(decisions.filter((d) => d.call_id === callOf('echo asked-run')).map((d) => d.decision)).toEqual([
      'ask',
      'deny',
    ]);

    // the project's rule is an expansion `keel trust diff` names
    const diff = await keel(['trust', 'diff', '--json'], { cwd: repo, home });
    expect(JSON.parse(diff.stdout).changes).toContainEqual({
      key: 'allow_commands',
      kind: 'expansion',
      detail: 'allow_commands: adds "echo project-run"',
    });
    // and the next keel in this project runs with the user's rules only, until the project is trusted
    const shown = await keel(['config', 'show'], { cwd: repo, home });
    expect(shown.stdout).toMatch(/allow_commands\s+= \["echo allowed-run"\]/);
    expect(shown.stdout).not.toContain('project-run');
  });
});
