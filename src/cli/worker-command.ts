/**
 * `keel worker --name NAME [--role ROLE] [--mode MAX] [--json]`: answer the hub requests addressed to
 * NAME by running keel sessions in this workspace (src/hub/worker.ts). Configured like the other hub
 * callers: KEEL_HUB_URL and KEEL_HUB_TOKEN (a project token); the agent key is kept in KEEL_HOME.
 * Progress goes to stderr (JSON lines on stdout with --json); SIGINT/SIGTERM stop it cleanly, and the
 * request in hand, not acked, is delivered again later.
 */
import { keelPaths } from '../config/paths.js';
import type { Mode } from '../config/schema.js';
import { runWorker, type WorkerEvent } from '../hub/worker.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load } from '../term/options.js';
import { agentKey, DEFAULT_HUB_URL, HubCallError } from '../tools/hub-client.js';
import { reportError } from './errors.js';

export interface WorkerFlags extends CommonFlags {
  name: string;
  role?: string;
  mode?: string;
}

const MAX_MODES: readonly Mode[] = ['ask', 'plan', 'edit', 'auto'];

export async function runWorkerCommand(flags: WorkerFlags): Promise<number> {
  const max = (flags.mode ?? 'plan') as Mode;
  if (!MAX_MODES.includes(max))
    return reportError(flags.json, 'CONFIG_ERROR', `--mode ${flags.mode}: expected ask, plan, edit or auto`);
  const projectToken = process.env.KEEL_HUB_TOKEN?.trim();
  if (!projectToken)
    return reportError(
      flags.json,
      'CONFIG_ERROR',
      'set KEEL_HUB_TOKEN (a project token from keel hub token create) for the worker to register with',
    );
  const url = (process.env.KEEL_HUB_URL?.trim() || DEFAULT_HUB_URL).replace(/\/+$/, '');
  let setup: ReturnType<typeof load>;
  try {
    setup = load(flags);
  } catch (err) {
    if (err instanceof ConfigError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    throw err;
  }
  const warn = (line: string) => process.stderr.write(`keel worker: warning: ${inertLine(line)}\n`);
  for (const warning of setup.loaded.warnings) warn(warning);

  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const report = (e: WorkerEvent) => {
    process.stderr.write(`keel worker: ${inertLine(describe(e, flags.name, max))}\n`);
    if (flags.json) process.stdout.write(`${JSON.stringify(e)}\n`);
  };
  try {
    const key = await agentKey({
      url,
      projectToken,
      name: flags.name,
      ...(flags.role ? { role: flags.role } : {}),
      stateDir: keelPaths().stateDir,
    });
    await runWorker({
      url,
      key,
      name: flags.name,
      cwd: setup.cwd,
      loaded: setup.loaded,
      max,
      signal: controller.signal,
      report,
      warn,
    });
    report({ event: 'stopping' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof HubCallError) {
      if (err.code === 'UNREACHABLE') return reportError(flags.json, 'ENVIRONMENT_ERROR', err.message);
      return reportError(flags.json, 'CONFIG_ERROR', `the hub refused (${err.code}): ${err.message}`);
    }
    throw err;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

function describe(e: WorkerEvent, name: string, max: Mode): string {
  switch (e.event) {
    case 'ready':
      return `${name} is answering requests (at most ${max} mode)`;
    case 'request':
      return `request ${e.id} from ${e.from}: ${e.mode}${e.mode !== e.asked ? ` (asked ${e.asked})` : ''}`;
    case 'done':
      return `request ${e.id} from ${e.from}: ${e.mode}, ${e.code}, done in ${e.seconds} s`;
    case 'failed':
      return `request ${e.id}: no reply sent (${e.error}); ${e.acked ? 'it is not run again' : 'it comes again later'}`;
    case 'stopping':
      return 'stopping (a request not answered comes again later)';
  }
}
