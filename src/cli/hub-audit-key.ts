/**
 * The audit key that seals the hub's workflow runs. By default each keel has its own
 * (`KEEL_HOME/audit.key`, made on first use); hubs on several machines sharing one PostgreSQL need one
 * key between them, named by `KEEL_HUB_AUDIT_KEY_FILE` or, without it, `hub_audit_key_file` in the user's own
 * config (a project's may not set it; mode 0600, this user's, never created by keel). `keel hub start`,
 * `keel hub runs verify` and `keel serve`'s approvals all take the key from here.
 */
import { keelPaths } from '../config/paths.js';
import { ensureAuditKey, readAuditKey, readPrivateAuditKey } from '../store/audit-key.js';

/** The shared key file the environment names, else the one the user's config does (`configured`), if any. */
function sharedKeyFile(env: NodeJS.ProcessEnv, configured: string | undefined): string | undefined {
  return env.KEEL_HUB_AUDIT_KEY_FILE?.trim() || configured?.trim() || undefined;
}

/** The key a hub seals with: the shared file (refused unless private), else KEEL_HOME's, created on first use. Throws. */
export function hubSealingKey(env: NodeJS.ProcessEnv, configured: string | undefined): Buffer {
  const shared = sharedKeyFile(env, configured);
  if (shared) return readPrivateAuditKey(shared);
  return ensureAuditKey(keelPaths(env).auditKey).key;
}

/** The key to check or seal runs with, never created: undefined when KEEL_HOME has none, an Error when unusable. */
export function hubAuditKey(
  env: NodeJS.ProcessEnv,
  configured: string | undefined,
): {
  key: Buffer | undefined | Error;
  path: string;
} {
  const shared = sharedKeyFile(env, configured);
  if (!shared) {
    const path = keelPaths(env).auditKey;
    return { key: readAuditKey(path), path };
  }
  try {
    return { key: readPrivateAuditKey(shared), path: shared };
  } catch (err) {
    return { key: err as Error, path: shared };
  }
}
