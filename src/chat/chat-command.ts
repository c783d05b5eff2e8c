/**
 * `keel chat`: an interactive session. Loads the config once, finds the session to go on with
 * (`--continue`, `--resume ID`), then hands over to the full-screen app, or to the plain
 * line-based one for NO_COLOR, TERM=dumb, or a stdin or stdout that is not a terminal.
 */
import { realpathSync, statSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { distinctCallIds } from '../agent/call-ids.js';
import type { LoadedConfig } from '../config/load.js';
import { MODES, type Mode } from '../config/schema.js';
import type { SessionRow, StoredEvent } from '../store/event-log.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load } from '../term/options.js';

export interface ChatFlags extends CommonFlags {
  continue?: boolean;
  resume?: string;
  mode?: string;
}

/** What both faces start from. */
export interface ChatSetup {
  loaded: LoadedConfig;
  /** The workspace, canonical. */
  cwd: string;
  mode: Mode;
  /** Whether --mode was given (a reopened session otherwise keeps its own). */
  modeGiven: boolean;
  /** The session to reopen at start. */
  resume?: string;
  read(id: string): Promise<{ row: SessionRow; events: StoredEvent[] } | undefined>;
  /** Called once the prompt is ready for input. */
  ready(): void;
}

/** Run `keel chat` until the person leaves; returns the exit status. */
export async function runChat(flags: ChatFlags): Promise<number> {
  const fail = (message: string) => {
    process.stderr.write(`keel: ${inertLine(message)}\n`);
    return EXIT.usage;
  };
  if (flags.mode !== undefined && !(MODES as readonly string[]).includes(flags.mode))
    return fail(`--mode must be one of ${MODES.join(', ')}, got "${flags.mode}"`);
  if (flags.continue && flags.resume !== undefined)
    return fail('--continue and --resume both name a session to go on with; give one');
  let cwd: string;
  let loaded: LoadedConfig;
  try {
    const setup = load(flags);
    if (!statSync(setup.cwd, { throwIfNoEntry: false })?.isDirectory())
      return fail(`workspace ${setup.cwd} is not a folder`);
    cwd = realpathSync(setup.cwd);
    loaded = setup.loaded;
  } catch (err) {
    if (err instanceof ConfigError) return fail(err.message);
    throw err;
  }
  // a chat without a model can do nothing: say so now, in the words the session would use
  if (!loaded.config.model && loaded.config.provider !== 'scripted') {
    const { createModelClient } = await import('../model/create.js');
    try {
      createModelClient(loaded.config);
    } catch (err) {
      if (err instanceof ConfigError) return fail(err.message);
      throw err;
    }
  }
  let resume: string | undefined;
  const store = () => import('../agent/stored-sessions.js');
  if (flags.continue) {
    const { withLog } = await store();
    resume = withLog((log) => log.newestSession(cwd)?.id);
    if (!resume) return fail(`no session to continue in ${cwd} (see keel sessions list)`);
  } else if (flags.resume !== undefined) {
    const { withLog } = await store();
    resume = withLog((log) => log.findSession(flags.resume ?? '')?.id);
    if (!resume) return fail(`no session matches "${flags.resume}" (see keel sessions list)`);
  }
  const setup: ChatSetup = {
    loaded,
    cwd,
    mode: (flags.mode as Mode | undefined) ?? loaded.config.permission,
    modeGiven: flags.mode !== undefined,
    ...(resume ? { resume } : {}),
    read: async (id) =>
      (await store()).withLog((log) => {
        const row = log.findSession(id);
        return row ? { row, events: distinctCallIds(log.events(row.id)) } : undefined;
      }),
    ready: () => {
      // for bench/chat.mjs: how long after the process started the prompt took input
      const marker = process.env.KEEL_CHAT_READY;
      if (marker) writeFileSync(marker, `${performance.now().toFixed(1)}\n`);
    },
  };
  const plain =
    !process.stdin.isTTY ||
    !process.stdout.isTTY ||
    Boolean(process.env.NO_COLOR) ||
    process.env.TERM === 'dumb';
  if (plain) {
    const { runPlainChat } = await import('./plain-app.js');
    return runPlainChat(setup);
  }
  const { runTuiChat } = await import('./tui-app.js');
  return runTuiChat(setup);
}
