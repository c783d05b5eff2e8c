/**
 * What keel's MCP tools read from: one project (the workspace root keel was started in), its memory,
 * its code graph and keel's own database. Opened once per `keel mcp` process and shared by every client.
 */
import { relative, sep } from 'node:path';
import { type KeelPaths, keelPaths } from '../config/paths.js';
import type { Config } from '../config/schema.js';
import { runIndexWorker } from '../graph/run-index.js';
import { GraphStore } from '../graph/store.js';
import { type OpenMemory, openMemory } from '../memory/open.js';
import { Scope, ScopeError } from '../policy/scope.js';
import type { Db } from '../store/db.js';
import { EventLog } from '../store/event-log.js';
import { type HubCaller, hubCaller } from '../tools/hub.js';

/** A request a client made that keel refuses; its message goes back as a tool error (isError). */
export class McpToolError extends Error {
  override name = 'McpToolError';
}

export interface McpContext {
  /** The canonical workspace root: every path a client names must resolve inside it. */
  root: string;
  config: Config;
  /** The hub the environment names (KEEL_HUB_URL, KEEL_HUB_TOKEN, KEEL_AGENT_NAME): its tools are served. */
  hub: HubCaller | null;
  paths: KeelPaths;
  db: Db;
  memory: OpenMemory;
  log: EventLog;
  /** The code graph, brought up to date (incrementally) first. */
  graph(): Promise<GraphStore>;
  /** A workspace-relative path ('src/a.ts') for a path a client sent, or a McpToolError when it leaves the project. */
  projectPath(path: string): string;
  close(): void;
}

/** Open the project at `root` (canonical) with its effective config. */
export function openContext(root: string, config: Config, env: NodeJS.ProcessEnv = process.env): McpContext {
  const paths = keelPaths(env);
  const memory = openMemory({ dir: root, config, env });
  const db = memory.db;
  // reads only: nothing is writable, so a path is checked against the workspace alone
  const scope = new Scope({ root, writable: [] });
  let indexing: Promise<void> | undefined;
  const controller = new AbortController();

  const graph = async (): Promise<GraphStore> => {
    // files change while a server runs: every query brings the index up to date (incremental, by
    // file hash); calls that arrive while one run is going wait for it instead of starting another
    indexing ??= runIndexWorker(paths.db, root, { signal: controller.signal })
      .then(() => undefined)
      .finally(() => {
        indexing = undefined;
      });
    try {
      await indexing;
    } catch (err) {
      throw new McpToolError(`could not index the workspace: ${(err as Error).message}`);
    }
    return new GraphStore(db, root);
  };

  const projectPath = (path: string): string => {
    try {
      const canonical = scope.resolve(path, 'read');
      return relative(root, canonical).split(sep).join('/') || '.';
    } catch (err) {
      // where a symlink points is not the client's to learn: only that the path leaves the project
      if (err instanceof ScopeError)
        throw new McpToolError(
          err.canonical === undefined ? `${path}: ${err.message}` : `${path} is outside the project`,
        );
      throw err;
    }
  };

  return {
    root,
    hub: hubCaller(env),
    config,
    paths,
    db,
    memory,
    log: new EventLog(db),
    graph,
    projectPath,
    close: () => {
      controller.abort();
      memory.close();
    },
  };
}
