/**
 * Opening a project's memory from keel's paths and config: the store, the project key (the repository at
 * its place), expired items archived, and this place's items from before places were kept claimed.
 */
import { type KeelPaths, keelPaths } from '../config/paths.js';
import type { Config } from '../config/schema.js';
import { type Db, openDb } from '../store/db.js';
import { archiveDir } from './archive.js';
import { statTerms } from './embed.js';
import { embeddingSettings, Memory } from './memory.js';
import { type ProjectKey, projectKey } from './project.js';

export interface OpenMemory {
  memory: Memory;
  project: ProjectKey;
  paths: KeelPaths;
  db: Db;
  /** Items the expiry sweep moved to the archive as this opened. */
  archived: number;
  close(): void;
}

/**
 * The memory of the project holding `dir`. `pinned`: inside a session, whose repository was pinned at its
 * start (a .git the model made later is never used). Pass `db` to share a connection that is already open.
 */
export function openMemory(opts: {
  dir: string;
  config: Config;
  env?: NodeJS.ProcessEnv;
  pinned?: boolean;
  db?: Db;
}): OpenMemory {
  const env = opts.env ?? process.env;
  const paths = keelPaths(env);
  const project = projectKey(opts.dir, opts.pinned ? { pinned: true } : {});
  const db = opts.db ?? openDb(paths.db);
  const embedding = embeddingSettings(opts.config, env);
  const memory = new Memory(db, project.key, {
    archiveDir: archiveDir(paths.stateDir),
    ...(embedding ? { embedding } : {}),
  });
  let archived = 0;
  try {
    archived = memory.archiveExpired();
    // items from before memory was kept per place that a session here made are this place's (the log says
    // where each session ran); the rest wait until a person shares them (`keel memory share`)
    if (project.key !== project.identity)
      memory.store.claimMadeAt(project.identity, project.key, project.root, statTerms);
  } catch (err) {
    if (!opts.db) db.close();
    throw err;
  }
  return { memory, project, paths, db, archived, close: () => (opts.db ? undefined : db.close()) };
}
