/** The real `keel` (chat, or a one-shot verb that asks) in a tmux pane: send keys, read the screen, wait with a deadline. */
import { execFileSync } from 'node:child_process';
import { afterEach } from 'vitest';
import { baseEnv, KEEL_BIN } from './harness.js';

// one tmux server for this test process, apart from anyone else's
const SOCKET = `keel-chat-test-${process.pid}`;
const panes: Pane[] = [];

/** The tmux socket the panes of this test process live on (for tmux commands of a test's own). */
export function paneSocket(): string {
  return SOCKET;
}
afterEach(() => {
  for (const pane of panes.splice(0)) pane.kill();
});

function tmux(...args: string[]): string {
  return execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
}

function quote(s: string): string {
  return `'${s.replace(/'/g, "'\\''")}'`;
}

export class Pane {
  private constructor(readonly name: string) {}

  /** Start `keel ARGS` in a fresh 120x40 pane; the pane stays after keel exits and shows its status. */
  static start(
    args: string[],
    opts: { cwd: string; home: string; env?: Record<string, string | undefined>; input?: string },
  ): Pane {
    const name = `p${panes.length}-${Date.now().toString(36)}`;
    const env: Record<string, string | undefined> = {
      ...baseEnv(opts.home),
      NO_COLOR: undefined,
      TERM: 'xterm-256color',
      ...opts.env,
    };
    const assignments = Object.entries(env)
      .filter((e): e is [string, string] => e[1] !== undefined)
      .map(([k, v]) => `${k}=${quote(v)}`);
    const command = `env -i ${assignments.join(' ')} ${quote(process.execPath)} ${quote(KEEL_BIN)} ${args.map(quote).join(' ')}${opts.input ? ` < ${quote(opts.input)}` : ''}; echo "[keel exited $?]"; sleep 600`;
    tmux('new-session', '-d', '-x', '120', '-y', '40', '-s', name, '-c', opts.cwd, command);
    const pane = new Pane(name);
    panes.push(pane);
    return pane;
  }

  /** The screen as text (`escapes`: with the colour and attribute codes tmux holds). */
  screen(escapes = false): string {
    return tmux('capture-pane', '-p', ...(escapes ? ['-e'] : []), '-t', this.name);
  }

  /** Everything the pane printed, scrolled-off lines included. */
  history(): string {
    return tmux('capture-pane', '-p', '-J', '-S', '-', '-t', this.name);
  }

  /** Type text (literally), then optional keys by tmux name (Enter, C-c, Up). */
  type(text: string, ...keys: string[]): void {
    if (text) tmux('send-keys', '-t', this.name, '-l', text);
    if (keys.length) tmux('send-keys', '-t', this.name, ...keys);
  }

  keys(...keys: string[]): void {
    tmux('send-keys', '-t', this.name, ...keys);
  }

  /** Poll the screen until it matches; fails with the screen in the message at the deadline. */
  async waitFor(match: RegExp | string, ms = 15_000): Promise<string> {
    const end = Date.now() + ms;
    for (;;) {
      const text = this.screen();
      if (typeof match === 'string' ? text.includes(match) : match.test(text)) return text;
      if (Date.now() > end) throw new Error(`pane never showed ${String(match)}; it shows:\n${text}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  kill(): void {
    try {
      tmux('kill-session', '-t', this.name);
    } catch {
      // already gone
    }
  }
}

/**
 * Type a message and wait until the transcript shows it. Keys typed in the first moments after the
 * prompt appears can be lost on a loaded machine (seen in CI, about once in a hundred runs); a
 * message that never shows is typed again, at most twice more.
 */
export async function send(pane: Pane, text: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    pane.type(text, 'Enter');
    try {
      await pane.waitFor(`› ${text}`, 3_000);
      return;
    } catch (err) {
      if (attempt >= 2) throw err;
    }
  }
}
