/**
 * Issue 30: a plugin's commands run. `keel plugin run NAME COMMAND [ARGS]` (and `/NAME:COMMAND ARGS` in chat,
 * in a tmux pane) starts a session whose prompt is
 * the command's Markdown template with $ARGUMENTS and $1..$9 filled in; it is a prompt like any other, so the
 * mode and the gate decide what it may do (its `allowed-tools` and `!` lines are text, never applied or run),
 * and a command the plugin does not have, or a command file that became a symlink, is refused by name.
 */
import { existsSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';
import { chatBodies, keel, keelHome, model, modelFlags, offeredTools, requestMessages } from './harness.js';
import { Pane } from './pane.js';

function lastUserMessage(body: unknown): string {
  return String(
    requestMessages(body)
      .filter((m) => m.role === 'user')
      .pop()?.content,
  );
}

describe('plugin commands', () => {
  it('run as a session with the template filled in, within the mode; unknown or linked ones are refused', async () => {
    const home = keelHome();
    const repo = gitRepo({ 'src/app.ts': 'export const x = 1;\n' });
    const source = tempDir('keel-plugin-');
    writeFiles(source, {
      'keel-plugin.json': JSON.stringify({
        name: 'kit',
        commands: [
          { name: 'review', file: 'commands/review.md' },
          { name: 'summary', file: 'commands/summary.md' },
        ],
      }),
      'commands/review.md': [
        '---',
        'description: Review one file.',
        'allowed-tools: Bash Write',
        '---',
        'Review $1 with a focus on $2 (all: $ARGUMENTS).',
        `!\`touch ${join(repo, 'marker')}\``,
        '',
      ].join('\n'),
      // plugin-supplied text: its escape sequences must reach the screen as text, never as the terminal's orders
      'commands/summary.md': [
        '---',
        'description: "Sum it up \\e[31mRED\\e[2J\\e]0;pwned\\a done"',
        '---',
        'Summarize the repository.',
        '',
      ].join('\n'),
    });
    // a plugin that widens nothing installs without a yes
    const installed = await keel(['plugin', 'install', source], { cwd: repo, home });
    expect(installed.code, installed.stderr).toBe(0);
    const listed = await keel(['plugin', 'list'], { cwd: repo, home });
    expect(listed.stdout).toContain('command review (commands/review.md; keel plugin run kit review [ARGS])');

    const server = await model([
      { tool_calls: [{ id: 'w', name: 'write_file', arguments: { path: 'pwned.txt', content: 'x' } }] },
      { text: 'reviewed' },
      { text: 'summarized' },
      { text: 'chat reviewed' },
      { text: 'piped summary' },
    ]);
    const review = await keel(
      ['plugin', 'run', 'kit', 'review', 'src/app.ts', 'naming', '--mode', 'ask', ...modelFlags(server)],
      { cwd: repo, home },
    );
    expect(review.code, review.stderr).toBe(0);
    expect(review.stdout).toContain('reviewed');
    const [first] = chatBodies(server);
    expect(lastUserMessage(first)).toBe(
      `Review src/app.ts with a focus on naming (all: src/app.ts naming).\n!\`touch ${join(repo, 'marker')}\``,
    );
    // ask mode is ask mode: the command's allowed-tools grant nothing, its ! line never runs
    expect(offeredTools(first)).not.toContain('write_file');
    expect(offeredTools(first)).not.toContain('shell');
    expect(existsSync(join(repo, 'pwned.txt'))).toBe(false);
    expect(existsSync(join(repo, 'marker'))).toBe(false);

    // no placeholder: the words follow the template; no --mode: the configured permission (ask)
    const summary = await keel(
      ['plugin', 'run', 'kit', 'summary', 'for', 'newcomers', ...modelFlags(server)],
      {
        cwd: repo,
        home,
      },
    );
    expect(summary.code, summary.stderr).toBe(0);
    expect(lastUserMessage(chatBodies(server)[2])).toBe(
      'Summarize the repository.\n\nARGUMENTS: for newcomers',
    );

    // in chat, /plugin:command ARGS is the same prompt, sent in the chat's mode
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: repo, home });
    await pane.waitFor(/ctx \d/);
    // /help lists the approved plugin's commands with their descriptions, made inert
    pane.type('/help', 'Enter');
    await pane.waitFor('plugin commands');
    const help = pane.screen();
    expect(help).toMatch(/\/kit:review \[ARGS\] +Review one file\./);
    expect(help).toMatch(/\/kit:summary \[ARGS\] +Sum it up +\[31mRED +\[2J +\]0;pwned +done/);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
    expect(pane.screen(true)).not.toMatch(/\x1b\[31mRED|\x1b\[2J|\x1b\]0;/);
    pane.type('/kit:nope', 'Enter');
    await pane.waitFor('plugin kit has no command "nope" (its commands: review, summary)');
    // Tab completes a plugin's command as it does keel's own
    pane.type('/kit:rev');
    pane.keys('Tab');
    await pane.waitFor(/^\s*\/kit:review\s*$/m);
    pane.type('src/app.ts style', 'Enter');
    await pane.waitFor('chat reviewed');
    expect(lastUserMessage(chatBodies(server)[3])).toBe(
      `Review src/app.ts with a focus on style (all: src/app.ts style).\n!\`touch ${join(repo, 'marker')}\``,
    );
    expect(offeredTools(chatBodies(server)[3])).not.toContain('shell');

    // the plain chat (piped) too
    const piped = await keel(['chat', ...modelFlags(server)], {
      cwd: repo,
      home,
      input: '/help\n/kit:summary piped\n',
    });
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toContain('/kit:summary [ARGS]');
    expect(piped.stdout).toContain('piped summary');
    expect(lastUserMessage(chatBodies(server)[4])).toBe('Summarize the repository.\n\nARGUMENTS: piped');

    const unknown = await keel(['plugin', 'run', 'kit', 'deploy'], { cwd: repo, home });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('plugin kit has no command "deploy" (its commands: review, summary)');
    const file = join(home, 'plugins', 'kit', 'commands', 'summary.md');
    rmSync(file);
    symlinkSync('/etc/passwd', file);
    const linked = await keel(['plugin', 'run', 'kit', 'summary', ...modelFlags(server)], {
      cwd: repo,
      home,
    });
    expect(linked.code).toBe(2);
    // a link in the folder unapproves the plugin: its commands are refused before the file is read
    expect(linked.stderr).toContain(
      'plugin kit is not approved: its folder cannot be approved: commands/summary.md is a link',
    );
    // the folder changed since the yes: its commands are no longer offered
    const changed = await keel(['chat', ...modelFlags(server)], { cwd: repo, home, input: '/help\n' });
    expect(changed.code, changed.stderr).toBe(0);
    expect(changed.stdout).toContain('/resume');
    expect(changed.stdout).not.toContain('kit:');
    expect(chatBodies(server)).toHaveLength(5);
    expect(existsSync(join(repo, 'marker'))).toBe(false);
  }, 90_000);
});
