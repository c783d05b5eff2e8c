/** `keel memory add|search|list|show|forget|export|import|share|stats`: a project's memory from the shell. */
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { archiveDir, countArchived } from '../memory/archive.js';
import { exportLines, ImportError, importItems, parseImport } from '../memory/import-export.js';
import { injectedLine } from '../memory/inject.js';
import { KINDS, type Kind, type MemoryItem } from '../memory/items.js';
import { MemoryLookupError } from '../memory/memory-store.js';
import { type OpenMemory, openMemory } from '../memory/open.js';
import { elsewhere, notSharedNote } from '../memory/places.js';
import { placeOf } from '../memory/project.js';
import { AuditLog } from '../store/audit.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { ConfigError, load } from '../term/options.js';
import { reportError } from './errors.js';
import { red } from './render.js';

export interface MemoryFlags {
  cwd?: string;
  json?: boolean;
  kind?: string;
  tag?: string[];
  limit?: number;
  k?: number;
  out?: string;
}

type Action = (m: OpenMemory, flags: MemoryFlags) => Promise<number>;

/** Open the project's memory, run one action, and turn what can go wrong into one error line or document. */
async function withMemory(flags: MemoryFlags, action: Action): Promise<number> {
  let m: OpenMemory | undefined;
  try {
    const { cwd, loaded } = load({ ...(flags.cwd ? { cwd: flags.cwd } : {}) });
    m = openMemory({ dir: cwd, config: loaded.config });
    const code = await action(m, flags);
    if (!flags.json) {
      for (const w of m.memory.warnings) process.stderr.write(`${red('keel: warning:')} ${inertLine(w)}\n`);
      for (const p of elsewhere(m)) process.stderr.write(`keel: ${inertLine(notSharedNote(p))}\n`);
    }
    return code;
  } catch (err) {
    if (err instanceof ConfigError || err instanceof MemoryLookupError || err instanceof ImportError)
      return reportError(flags.json, 'CONFIG_ERROR', err.message);
    const e = err as NodeJS.ErrnoException;
    if (typeof e.code === 'string' && /^E[A-Z]+$/.test(e.code))
      return reportError(flags.json, 'ENVIRONMENT_ERROR', e.message);
    throw err;
  } finally {
    m?.close();
  }
}

function printJson(doc: unknown): void {
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
}

function kindOf(flags: MemoryFlags, fallback?: Kind): Kind | undefined {
  if (flags.kind === undefined) return fallback;
  if (!(KINDS as readonly string[]).includes(flags.kind))
    throw new ConfigError(`--kind ${flags.kind} is not a kind; use one of ${KINDS.join(', ')}`);
  return flags.kind as Kind;
}

function line(item: MemoryItem): string {
  return `${item.id}  ${inertLine(injectedLine(item).slice(2))}`;
}

/** The item an id (or a unique prefix of one) names in this project. */
function lookup(m: OpenMemory, id: string): MemoryItem {
  const item = m.memory.find(id);
  if (!item) throw new ConfigError(`no memory item matches "${id}" in this project (see keel memory list)`);
  return item;
}

export function memoryAdd(words: string[], flags: MemoryFlags): Promise<number> {
  return withMemory(flags, async (m) => {
    const text = words.join(' ').trim();
    if (!text) throw new ConfigError('keel memory add: no text given');
    const kind = kindOf(flags, 'note') as Kind;
    const { item, folded } = await m.memory.add({ kind, text, tags: flags.tag ?? [], author: 'user' });
    if (flags.json)
      printJson({ id: item.id, project: m.project.key, folded, item, warnings: m.memory.warnings });
    else
      process.stdout.write(
        folded ? `already remembered ${item.id} (refreshed)\n` : `remembered ${item.id}\n`,
      );
    return EXIT.ok;
  });
}

export function memorySearch(words: string[], flags: MemoryFlags): Promise<number> {
  return withMemory(flags, async (m) => {
    const query = words.join(' ').trim();
    if (!query) throw new ConfigError('keel memory search: no query given');
    const hits = await m.memory.search(query, flags.k ?? 10);
    if (flags.json) {
      printJson({
        project: m.project.key,
        query,
        results: hits.map((h) => ({
          ...h.item,
          score: h.score,
          bm25_rank: h.bm25_rank,
          vector_rank: h.vector_rank,
        })),
        warnings: m.memory.warnings,
      });
      return EXIT.ok;
    }
    if (!hits.length) process.stderr.write('nothing remembered matches\n');
    for (const h of hits) process.stdout.write(`${line(h.item)}\n`);
    return EXIT.ok;
  });
}

export function memoryList(flags: MemoryFlags): Promise<number> {
  return withMemory(flags, async (m) => {
    const kind = kindOf(flags);
    const items = m.memory.list({ ...(kind ? { kind } : {}), limit: flags.limit ?? 50 });
    if (flags.json) printJson({ project: m.project.key, items });
    else if (!items.length)
      process.stderr.write(
        kind ? `no ${kind} items in this project\n` : 'no memory items in this project yet\n',
      );
    else for (const item of items) process.stdout.write(`${line(item)}\n`);
    return EXIT.ok;
  });
}

export function memoryShow(id: string, flags: MemoryFlags): Promise<number> {
  return withMemory(flags, async (m) => {
    const item = lookup(m, id);
    if (flags.json) {
      printJson({ item });
      return EXIT.ok;
    }
    const rows: Array<[string, string]> = [
      ['id', item.id],
      ['kind', item.kind],
      ['author', item.author],
      ['tags', item.tags.join(', ') || '-'],
      ['session', item.session_id ?? '-'],
      ['from', item.origin ? (placeOf(item.origin) ?? item.origin) : 'here'],
      ['created', item.created_at],
      ['updated', item.updated_at],
      ['expires', item.expires_at ?? 'never'],
    ];
    for (const [k, v] of rows) process.stdout.write(`${k.padEnd(8)} ${inertLine(v)}\n`);
    process.stdout.write(`\n${inertLine(item.text)}\n`);
    return EXIT.ok;
  });
}

export function memoryForget(id: string, flags: MemoryFlags): Promise<number> {
  return withMemory(flags, async (m) => {
    const item = lookup(m, id);
    // recorded before it happens, as everything keel does: metadata only, the text stays out of the chain
    const audit = new AuditLog(m.paths.auditDir);
    try {
      audit.append({
        type: 'memory_forget',
        project: m.project.key,
        id: item.id,
        kind: item.kind,
        author: item.author,
        content_sha256: item.hash,
      });
    } finally {
      audit.close();
    }
    m.memory.forget(item);
    if (flags.json) printJson({ forgot: item.id, project: m.project.key });
    else process.stdout.write(`forgot ${item.id}\n`);
    return EXIT.ok;
  });
}

export function memoryExport(flags: MemoryFlags): Promise<number> {
  return withMemory(flags, async (m) => {
    const items = m.memory.list();
    const text = exportLines(items);
    if (flags.out) {
      writeFileSync(resolve(flags.out), text);
      if (flags.json) printJson({ project: m.project.key, count: items.length, file: resolve(flags.out) });
      else process.stderr.write(`exported ${items.length} items to ${inertLine(resolve(flags.out))}\n`);
    } else if (flags.json) printJson({ project: m.project.key, count: items.length, items });
    else process.stdout.write(text);
    return EXIT.ok;
  });
}

export function memoryImport(file: string, flags: MemoryFlags): Promise<number> {
  return withMemory(flags, async (m) => {
    const source = file === '-' ? 'stdin' : resolve(file);
    let text: string;
    try {
      text = readFileSync(file === '-' ? 0 : source, 'utf8');
    } catch (err) {
      throw new ConfigError(`cannot read ${source}: ${(err as Error).message}`);
    }
    const items = parseImport(text, source);
    const { imported, folded } = await importItems(m.memory, items);
    if (flags.json)
      printJson({ project: m.project.key, file: source, imported, folded, warnings: m.memory.warnings });
    else
      process.stdout.write(
        `imported ${imported} items (${folded} already there) from ${inertLine(source)}\n`,
      );
    return EXIT.ok;
  });
}

export function memoryShare(from: string, flags: MemoryFlags): Promise<number> {
  return withMemory(flags, async (m) => {
    const places = m.memory.store.places(m.project.identity).filter((p) => p.project !== m.project.key);
    // a folder is read as it is now (the other place may have moved on, or be gone: then as written)
    let folder = resolve(from);
    try {
      folder = realpathSync.native(folder);
    } catch {}
    const source = places.find((p) => p.project === from || placeOf(p.project) === folder);
    if (!source) {
      const known = places.map((p) => placeOf(p.project) ?? p.project);
      throw new ConfigError(
        `${from} is not a place of this repository with memory to share${
          known.length ? ` (its other places: ${known.join(', ')})` : ' (it has no other place with memory)'
        }`,
      );
    }
    // recorded before it happens, as forget is: which place's memory went where, no text
    const audit = new AuditLog(m.paths.auditDir);
    try {
      audit.append({
        type: 'memory_share',
        project: m.project.key,
        from: source.project,
        items: source.items,
      });
    } finally {
      audit.close();
    }
    const { shared, folded } = await m.memory.shareFrom(source.project);
    const shown = placeOf(source.project) ?? source.project;
    if (flags.json)
      printJson({ project: m.project.key, from: shown, shared, folded, warnings: m.memory.warnings });
    else process.stdout.write(`shared ${shared} items (${folded} already here) from ${inertLine(shown)}\n`);
    return EXIT.ok;
  });
}

export function memoryStats(flags: MemoryFlags): Promise<number> {
  return withMemory(flags, async (m) => {
    const byKind = m.memory.store.countsByKind(m.project.key);
    const items = Object.values(byKind).reduce((a, b) => a + b, 0);
    const archived = countArchived(archiveDir(m.paths.stateDir), m.project.key);
    const doc = {
      project: m.project.key,
      project_source: m.project.source,
      root: m.project.root,
      items,
      by_kind: byKind,
      archived,
      archived_now: m.archived,
      archive_dir: archiveDir(m.paths.stateDir),
      embedder: m.memory.embeddingModel ?? 'offline',
      elsewhere: elsewhere(m),
    };
    if (flags.json) {
      printJson(doc);
      return EXIT.ok;
    }
    const source =
      m.project.source === 'root-commit' ? 'its first commit, at this place' : 'its folder: no git history';
    process.stdout.write(`project   ${inertLine(m.project.key)} (from ${source})\n`);
    process.stdout.write(
      `items     ${items}${
        items
          ? ` (${Object.entries(byKind)
              .map(([k, n]) => `${k} ${n}`)
              .join(', ')})`
          : ''
      }\n`,
    );
    process.stdout.write(`archived  ${archived} (expired, in ${inertLine(doc.archive_dir)})\n`);
    process.stdout.write(`embedder  ${inertLine(doc.embedder)}\n`);
    return EXIT.ok;
  });
}
