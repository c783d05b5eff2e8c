/**
 * Extraction: parse one file with its tree-sitter grammar and pull out definitions, imports and
 * references by name. Grammars load once per process, on first use (each takes a while to compile).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Language, type Node, Parser, Query } from 'web-tree-sitter';
import { LANGUAGES, type LanguageId } from './queries.js';

export type SymbolKind = 'function' | 'method' | 'class' | 'interface' | 'type' | 'enum' | 'struct' | 'trait';

export interface Definition {
  name: string;
  kind: SymbolKind;
  /** The definition's first line, trimmed and capped. */
  signature: string;
  /** 1-based, inclusive. */
  startLine: number;
  endLine: number;
  /** The enclosing type's name (a method's class, a Go receiver, a Rust impl's type). */
  parent?: string;
}

export interface Extracted {
  defs: Definition[];
  imports: string[];
  /** Names used (called, constructed, named as a type), with the line of each use. */
  refs: Array<{ name: string; line: number }>;
}

const MAX_SIGNATURE = 160;
const CONTAINERS = new Set<SymbolKind>(['class', 'interface', 'struct', 'trait', 'enum']);

interface Loaded {
  parser: Parser;
  query: Query;
}

let init: Promise<void> | undefined;
const loaded = new Map<LanguageId, Promise<Loaded>>();

const require = createRequire(import.meta.url);

/** The grammars ship as files of the tree-sitter-wasms package, found at run time (never bundled). */
function grammarFile(wasm: string): string {
  return join(dirname(require.resolve('tree-sitter-wasms/package.json')), 'out', wasm);
}

function runtime(): Promise<void> {
  init ??= Parser.init({
    locateFile: () => require.resolve('web-tree-sitter/tree-sitter.wasm'),
  });
  return init;
}

/** Start loading the parser runtime now (it takes a while), so it overlaps with listing and hashing files. */
export function warmUp(): void {
  runtime().catch(() => {
    // the first parse reports it
    init = undefined;
  });
}

function grammar(id: LanguageId): Promise<Loaded> {
  let entry = loaded.get(id);
  if (!entry) {
    entry = (async () => {
      await runtime();
      const language = await Language.load(grammarFile(LANGUAGES[id].wasm));
      const parser = new Parser();
      parser.setLanguage(language);
      return { parser, query: new Query(language, LANGUAGES[id].query) };
    })();
    loaded.set(id, entry);
  }
  return entry;
}

function signatureOf(node: Node): string {
  const first = node.text.split('\n', 1)[0] ?? '';
  const line = first.trim().replace(/\s+/g, ' ');
  return line.length > MAX_SIGNATURE ? `${line.slice(0, MAX_SIGNATURE - 1)}…` : line;
}

function unquote(text: string): string {
  return text.replace(/^["'`]|["'`]$/g, '');
}

/** Definitions, imports and references of one file's source. */
export async function extract(language: LanguageId, source: string): Promise<Extracted> {
  const { parser, query } = await grammar(language);
  const tree = parser.parse(source);
  if (!tree) return { defs: [], imports: [], refs: [] };
  try {
    const defs: Definition[] = [];
    const defNames = new Set<number>();
    const scopes: Array<{ name: string; start: number; end: number }> = [];
    const imports = new Set<string>();
    const refs: Extracted['refs'] = [];
    const refNodes: Node[] = [];
    for (const match of query.matches(tree.rootNode)) {
      let def: Node | undefined;
      let kind: SymbolKind | undefined;
      let name: Node | undefined;
      let parent: string | undefined;
      let scope: Node | undefined;
      let scopeName: string | undefined;
      let required = true;
      let imported: string | undefined;
      for (const { name: capture, node } of match.captures) {
        if (capture.startsWith('def.')) {
          def = node;
          kind = capture.slice(4) as SymbolKind;
        } else if (capture === 'name') name = node;
        else if (capture === 'parent') parent = node.text;
        else if (capture === 'scope') scope = node;
        else if (capture === 'scope.name') scopeName = node.text;
        else if (capture === 'require') required = node.text === 'require';
        else if (capture === 'import') imported = unquote(node.text);
        else if (capture === 'ref') refNodes.push(node);
      }
      if (imported !== undefined && required && imported !== '') imports.add(imported);
      if (scope && scopeName) scopes.push({ name: scopeName, start: scope.startIndex, end: scope.endIndex });
      if (def && kind && name) {
        defNames.add(name.startIndex);
        // `export function f` is one definition: its line starts with the export
        const whole = def.parent?.type === 'export_statement' ? def.parent : def;
        defs.push({
          name: name.text,
          kind,
          signature: signatureOf(whole),
          startLine: def.startPosition.row + 1,
          endLine: def.endPosition.row + 1,
          ...(parent ? { parent } : {}),
          // offsets for finding the enclosing definition below; dropped before returning
          ...({ start: def.startIndex, end: def.endIndex } as object),
        });
      }
    }
    for (const node of refNodes) {
      // a definition's own name is not a use of it
      if (defNames.has(node.startIndex)) continue;
      refs.push({ name: node.text, line: node.startPosition.row + 1 });
    }
    return { defs: withParents(defs, scopes), imports: [...imports], refs };
  } finally {
    tree.delete();
  }
}

type Located = Definition & { start?: number; end?: number };

/** A method's parent is the innermost type definition (or impl block) around it. */
function withParents(
  defs: Located[],
  scopes: Array<{ name: string; start: number; end: number }>,
): Definition[] {
  const containers = [
    ...defs
      .filter((d) => CONTAINERS.has(d.kind))
      .map((d) => ({ name: d.name, start: d.start ?? 0, end: d.end ?? 0 })),
    ...scopes,
  ];
  // the same node can match twice (a Go method with a pointer receiver matches one pattern only, but be safe)
  const seen = new Set<string>();
  const out: Definition[] = [];
  for (const def of defs) {
    const { start = 0, end = 0, ...clean } = def;
    const key = `${start}:${clean.name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (!clean.parent) {
      let best: { name: string; start: number; end: number } | undefined;
      for (const c of containers) {
        const inside = c.start <= start && end <= c.end && !(c.start === start && c.end === end);
        if (inside && (!best || c.end - c.start < best.end - best.start)) best = c;
      }
      if (best) clean.parent = best.name;
    }
    if (clean.kind === 'function' && clean.parent) clean.kind = 'method';
    out.push(clean);
  }
  return out.sort((a, b) => a.startLine - b.startLine);
}
