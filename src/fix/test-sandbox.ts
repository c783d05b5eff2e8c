/** The sandbox a fix's tests run in, over the snapshot. */
import type { LoadedConfig } from '../config/load.js';
import { createSandbox, type Sandbox } from '../policy/sandbox.js';
import type { Snapshot } from './snapshot.js';

/** The sandbox the tests run in: the configured one over the snapshot, or none (the user asked for these tests). */
export async function testSandbox(
  snapshot: Snapshot,
  reportsDir: string,
  loaded: LoadedConfig,
): Promise<Sandbox> {
  const config = loaded.config;
  return createSandbox({
    kind: config.sandbox,
    root: snapshot.dir,
    // the snapshot's node_modules (links, and caches a tool writes) too: it is rebuilt before each run
    writable: [snapshot.top, reportsDir],
    network: config.sandbox_network,
    passEnv: config.sandbox_env,
    limits: config.sandbox_limits,
    // the linked dependency folders live in the user's checkout, which may sit under the sandbox's private
    // /tmp: bind them (read-only) so the links resolve inside it too
    protectedDirs: snapshot.linkedFrom,
  });
}
