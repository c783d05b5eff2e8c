/** Driving the real binary on a real terminal: tmux runs it in a pane, tests send keys and read the screen. */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterEach } from 'vitest';
import { baseEnv, KEEL_BIN } from './harness.js';

const sockets: string[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) {
    try {
      execFileSync('tmux', ['-L', socket, 'kill-server'], { stdio: 'ignore' });
    } catch {
      // already gone
    }
  }
});

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export interface Pane {
  /** Type text (tmux key names such as Enter, C-c are given as separate keys). */
  keys(...keys: string[]): void;
  /** Type literal text (no key names). */
  type(text: string): void;
  screen(): string;
  /** Wait until the screen matches, or fail with what it shows. */
  waitFor(pattern: RegExp | string, timeoutMs?: number): Promise<string>;
}

/**
 * Run `keel ARGS` in a fresh tmux server (its own socket), in `cwd`, with a clean environment; when it
 * exits the pane prints `EXIT=<code>` and stays open to be read.
 */
export function keelInTmux(
  args: string[],
  opts: { cwd: string; home: string; env?: Record<string, string>; width?: number; height?: number },
): Pane {
  const socket = `keel-test-${randomBytes(4).toString('hex')}`;
  sockets.push(socket);
  const env = { ...baseEnv(opts.home), TERM: 'xterm-256color', ...opts.env };
  const assignments = Object.entries(env).map(([k, v]) => `${k}=${quote(v)}`);
  const command = `env -i ${assignments.join(' ')} ${quote(process.execPath)} ${quote(KEEL_BIN)} ${args.map(quote).join(' ')}; echo "EXIT=$?"; sleep 600`;
  execFileSync('tmux', [
    '-L',
    socket,
    '-f',
    '/dev/null',
    'new-session',
    '-d',
    '-x',
    String(opts.width ?? 120),
    '-y',
    String(opts.height ?? 40),
    '-c',
    opts.cwd,
    command,
  ]);
  const tmux = (...a: string[]) => execFileSync('tmux', ['-L', socket, ...a], { encoding: 'utf8' });
  const pane: Pane = {
    keys: (...keys) => void tmux('send-keys', '-t', '0', ...keys),
    type: (text) => void tmux('send-keys', '-t', '0', '-l', text),
    screen: () => tmux('capture-pane', '-p', '-J', '-t', '0', '-S', '-200'),
    async waitFor(pattern, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      const matches = (s: string) => (typeof pattern === 'string' ? s.includes(pattern) : pattern.test(s));
      for (;;) {
        const screen = pane.screen();
        if (matches(screen)) return screen;
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${pattern}; the screen shows:\n${screen}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
  return pane;
}
