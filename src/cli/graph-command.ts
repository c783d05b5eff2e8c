/** `keel graph index|query|map`: the code graph from the shell (the same index the session tools use). */
import { realpathSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import { keelPaths } from '../config/paths.js';
import type { IndexSummary } from '../graph/index.js';
import { IndexError, runIndexWorker } from '../graph/run-index.js';
import { GraphStore, type SymbolRow } from '../graph/store.js';
import { openDb } from '../store/db.js';
import { EXIT } from '../term/exit-codes.js';
import { inert, inertLine } from '../term/inert.js';
import { ConfigError, existingWorkspace, load } from '../term/options.js';
import { reportError } from './errors.js';
import { dim, thousands } from './render.js';

export interface GraphFlags {
  cwd?: string;
  json?: boolean;
}

function writeJson(doc: unknown): void {
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
}

/**
 * Bring the index up to date: the count of files first ("indexing 1,234 files…"), then files done on
 * stderr, live on a terminal and every tenth on a pipe; `--json` keeps stdout and stderr for its document.
 */
async function indexNow(root: string, json: boolean | undefined): Promise<IndexSummary> {
  const live = !json && process.stderr.isTTY && process.env.TERM !== 'dumb';
  let shown = -1;
  const summary = await runIndexWorker(keelPaths().db, root, {
    onProgress: (done, total) => {
      if (json) return;
      const tenth = Math.floor((done * 10) / Math.max(1, total));
      const line = `indexing ${thousands(total)} files…${done ? ` ${thousands(done)} done` : ''}`;
      if (live) process.stderr.write(`\r${dim(line)}\x1b[K`);
      else if (tenth !== shown) process.stderr.write(`${line}\n`);
      shown = tenth;
    },
  });
  if (live) process.stderr.write('\r\x1b[K');
  return summary;
}

/** Run a graph verb with the one error shape: a bad folder is CONFIG_ERROR, a failed index ENVIRONMENT_ERROR. */
async function guarded(json: boolean | undefined, run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof ConfigError) return reportError(json, 'CONFIG_ERROR', err.message);
    if (err instanceof IndexError)
      return reportError(json, 'ENVIRONMENT_ERROR', `graph index: ${err.message}`);
    throw err;
  }
}

function rootOf(flags: GraphFlags): string {
  return realpathSync.native(existingWorkspace(flags));
}

/** `keel graph index`. */
export function graphIndex(flags: GraphFlags): Promise<number> {
  return guarded(flags.json, async () => {
    const root = rootOf(flags);
    const s = await indexNow(root, flags.json);
    if (flags.json) writeJson({ root, ...s });
    else
      process.stdout.write(
        `indexed ${s.files} files, ${s.symbols} symbols in ${s.ms} ms (${s.parsed} parsed, ${s.removed} removed)${s.truncated ? '; the listing was cut at its cap' : ''}\n`,
      );
    return EXIT.ok;
  });
}

function symbolLine(s: SymbolRow): string {
  const name = s.parent ? `${s.parent}.${s.name}` : s.name;
  return inertLine(`${s.path}:${s.start_line}-${s.end_line} ${s.kind} ${name}  ${s.signature}`);
}

/** `keel graph query NAME [--refs]` or `keel graph query --outline FILE`. */
export function graphQuery(
  name: string | undefined,
  flags: GraphFlags & { refs?: boolean; outline?: string },
): Promise<number> {
  return guarded(flags.json, async () => {
    const root = rootOf(flags);
    if (!name && !flags.outline) throw new ConfigError('keel graph query: give a NAME, or --outline FILE');
    let file: string | undefined;
    if (flags.outline) {
      // a path the user types resolves from where they stand (-C, else the current folder), like other verbs
      const abs = resolve(resolve(flags.cwd ?? process.cwd()), flags.outline);
      let real = abs;
      try {
        real = realpathSync.native(abs);
      } catch {
        throw new ConfigError(`${flags.outline} does not exist in ${root}`);
      }
      if (!real.startsWith(root + sep))
        throw new ConfigError(`${flags.outline} is outside the workspace ${root}`);
      file = relative(root, real).split(sep).join('/');
    }
    await indexNow(root, flags.json);
    const db = openDb(keelPaths().db);
    try {
      const store = new GraphStore(db, root);
      if (file) {
        const outline = store.outline(file);
        if (!outline)
          throw new ConfigError(
            `${file} is not in the code graph (unsupported language, ignored, or over 1 MB)`,
          );
        if (flags.json) writeJson({ path: file, outline });
        else for (const s of outline) process.stdout.write(`${symbolLine(s)}\n`);
        return EXIT.ok;
      }
      const query = name as string;
      const definitions = store.definitions(query, 100);
      const references = flags.refs ? store.references(query, 1000) : undefined;
      if (flags.json) writeJson({ name: query, definitions, ...(references ? { references } : {}) });
      else {
        if (!definitions.length) process.stderr.write(`no definition named ${inertLine(query)}\n`);
        for (const s of definitions) process.stdout.write(`${symbolLine(s)}\n`);
        if (references) {
          process.stdout.write(`${references.length} references\n`);
          for (const r of references) process.stdout.write(`${inertLine(`${r.path}:${r.line}`)}\n`);
        }
      }
      return definitions.length || references?.length ? EXIT.ok : EXIT.failed;
    } finally {
      db.close();
    }
  });
}

/** `keel graph map [TASK] [--tokens N]`: the repo map a session would start with. */
export function graphMap(task: string | undefined, flags: GraphFlags & { tokens?: number }): Promise<number> {
  return guarded(flags.json, async () => {
    const { cwd, loaded } = load(flags);
    const root = realpathSync.native(cwd);
    const budget = flags.tokens ?? loaded.config.graph.map_tokens;
    await indexNow(root, flags.json);
    const started = Date.now();
    const { buildRepoMap } = await import('../graph/map.js');
    const db = openDb(keelPaths().db);
    try {
      const map = await buildRepoMap(db, root, task ?? '', budget);
      const ms = Date.now() - started;
      if (flags.json) writeJson({ tokens: 0, files: [], symbols: 0, text: '', ...map, budget, ms });
      else if (map) process.stdout.write(`${inert(map.text)}\n`);
      else
        process.stderr.write(
          `no repo map: ${budget === 0 ? 'the budget is 0' : 'nothing fits the budget'}\n`,
        );
      if (!flags.json && map)
        process.stderr.write(dim(`${map.tokens} tokens, ${map.files.length} files, ${ms} ms\n`));
      return EXIT.ok;
    } finally {
      db.close();
    }
  });
}
