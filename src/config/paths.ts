/** Where keel keeps user config and state: KEEL_HOME, or the XDG folders. */
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface KeelPaths {
  userConfig: string;
  stateDir: string;
  db: string;
  auditDir: string;
  /** The audit chain's HMAC key: beside the audit folder (store/audit-key.ts assumes so), never inside it. */
  auditKey: string;
  runsDir: string;
  trustFile: string;
  undoDir: string;
  /** Where `keel fix` keeps its snapshots: the one part of keel's state a session may write. */
  worktreesDir: string;
  /** The user's own skills (Agent Skills folders, each with a SKILL.md). */
  skillsDir: string;
  /** Installed plugins, one folder each, and the record of what the person approved (`keel plugin install`). */
  pluginsDir: string;
}

/** Resolve keel's paths from the environment. */
export function keelPaths(env: NodeJS.ProcessEnv = process.env): KeelPaths {
  const home = env.KEEL_HOME;
  if (home) {
    return {
      userConfig: join(home, 'config.toml'),
      stateDir: home,
      db: join(home, 'keel.db'),
      auditDir: join(home, 'audit'),
      auditKey: join(home, 'audit.key'),
      runsDir: join(home, 'runs'),
      trustFile: join(home, 'trust.json'),
      undoDir: join(home, 'undo'),
      worktreesDir: join(home, 'worktrees'),
      skillsDir: join(home, 'skills'),
      pluginsDir: join(home, 'plugins'),
    };
  }
  const configHome = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  const stateHome = env.XDG_STATE_HOME || join(homedir(), '.local', 'state');
  const stateDir = join(stateHome, 'keel');
  return {
    userConfig: join(configHome, 'keel', 'config.toml'),
    stateDir,
    db: join(stateDir, 'keel.db'),
    auditDir: join(stateDir, 'audit'),
    auditKey: join(stateDir, 'audit.key'),
    runsDir: join(stateDir, 'runs'),
    trustFile: join(stateDir, 'trust.json'),
    undoDir: join(stateDir, 'undo'),
    worktreesDir: join(stateDir, 'worktrees'),
    skillsDir: join(configHome, 'keel', 'skills'),
    pluginsDir: join(configHome, 'keel', 'plugins'),
  };
}

/** keel's own state that no session may write, even when it lies inside the workspace. */
export function protectedStatePaths(paths: KeelPaths): string[] {
  return [
    paths.db,
    `${paths.db}-wal`,
    `${paths.db}-shm`,
    paths.auditDir,
    paths.auditKey,
    paths.runsDir,
    paths.trustFile,
    paths.undoDir,
    paths.userConfig,
    paths.skillsDir,
    paths.pluginsDir,
    // expired memory, moved out of the database (src/memory/archive.ts)
    join(paths.stateDir, 'memory-archive'),
    // the bands routing uses (src/model/difficulty.ts): a model must not route itself
    join(paths.stateDir, 'routing-calibration.json'),
  ];
}
