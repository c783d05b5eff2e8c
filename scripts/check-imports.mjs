// Imports point down the layers (docs/ARCHITECTURE.md, "Layers"). Reads every import, export-from and
// import() (types too) in src/**/*.ts and fails, with file:line and the arrow, on one that points up a
// layer or closes a cycle between folders of one layer. No dependencies: `npm run check` runs it.
//
//   node scripts/check-imports.mjs [ROOT]     (ROOT: the folder holding src/, by default this repository)
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

// Top to bottom; a folder may import its own layer's folders and every layer below, never one above.
// Keep this table and the one in docs/ARCHITECTURE.md the same.
export const LAYERS = [
  ['faces', ['cli', 'chat', 'server', 'mcp']],
  ['terminal', ['term']],
  ['applications', ['fix', 'batch', 'hub', 'eval', 'goal']],
  ['core', ['agent']],
  ['services', ['model', 'tools', 'policy', 'memory', 'graph', 'verify', 'skills']],
  ['foundation', ['store', 'config', 'http']],
];

// `import … from '…'`, `export … from '…'` (clauses may span lines), `import '…'`, and `import('…')`
const STATIC =
  /^[ \t]*(?:import|export)[ \t]+(?:type[ \t]+)?(?:[\w$]+[ \t]*,?[ \t]*)?(?:\*(?:[ \t]+as[ \t]+[\w$]+)?|\{[^}]*\})?[ \t]*from[ \t]*(['"])([^'"\n]+)\1/gm;
const BARE = /^[ \t]*import[ \t]*(['"])([^'"\n]+)\1/gm;
const DYNAMIC = /\bimport[ \t]*\(\s*(['"])([^'"\n]+)\1/g;

/** Every relative import in one file's text: the specifier and its line. */
export function importsOf(text) {
  const found = [];
  for (const re of [STATIC, BARE, DYNAMIC]) {
    for (const m of text.matchAll(re)) {
      const spec = m[2];
      if (!spec.startsWith('.')) continue;
      const at = m.index + m[0].lastIndexOf(spec);
      const lineStart = text.lastIndexOf('\n', at) + 1;
      const before = text.slice(lineStart, at);
      // an import() named in a comment is no import
      if (re === DYNAMIC && (before.includes('//') || /^\s*\*/.test(before) || /^\s*\/\*/.test(before)))
        continue;
      found.push({ spec, line: text.slice(0, at).split('\n').length });
    }
  }
  return found.sort((a, b) => a.line - b.line);
}

function tsFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tsFiles(path));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/** The problems in ROOT/src: each a line of text naming the file, the line and the arrow. */
export function checkImports(root) {
  const src = join(root, 'src');
  const rank = new Map();
  LAYERS.forEach(([layer, folders], i) => {
    for (const folder of folders) rank.set(folder, { layer, i });
  });
  const folderOf = (path) => relative(src, path).split(sep)[0];
  const problems = [];
  const unplaced = new Set();
  /** folder -> folder -> the first import making that arrow */
  const arrows = new Map();
  for (const file of tsFiles(src).sort()) {
    const shown = relative(root, file);
    const from = folderOf(file);
    if (!rank.has(from)) {
      if (!unplaced.has(from))
        problems.push(
          `${relative(root, join(src, from))}: in no layer; add it to LAYERS in scripts/check-imports.mjs and to docs/ARCHITECTURE.md`,
        );
      unplaced.add(from);
      continue;
    }
    for (const { spec, line } of importsOf(readFileSync(file, 'utf8'))) {
      const target = resolve(dirname(file), spec);
      if (relative(src, target).startsWith('..')) continue;
      const to = folderOf(target);
      if (to === from) continue;
      const where = `${shown}:${line}`;
      if (!rank.has(to)) {
        problems.push(`${where}: ${from} -> ${to} ('${spec}'): ${to} is in no layer`);
        continue;
      }
      const a = rank.get(from);
      const b = rank.get(to);
      if (b.i < a.i) {
        problems.push(`${where}: ${from} -> ${to} ('${spec}') points up: ${a.layer} imports ${b.layer}`);
        continue;
      }
      if (!arrows.has(from)) arrows.set(from, new Map());
      if (!arrows.get(from).has(to)) arrows.get(from).set(to, where);
    }
  }
  for (const group of cycles(arrows)) {
    const inside = group.flatMap((f) =>
      [...arrows.get(f)].filter(([t]) => group.includes(t)).map(([t, where]) => `${f} -> ${t} (${where})`),
    );
    problems.push(`folders import each other (${group.join(', ')}): ${inside.join(', ')}`);
  }
  return problems;
}

/** The groups of folders that reach each other through their arrows (Tarjan's strongly connected components). */
function cycles(arrows) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const groups = [];
  const visit = (v) => {
    index.set(v, index.size);
    low.set(v, index.get(v));
    stack.push(v);
    for (const w of arrows.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const group = stack.splice(stack.indexOf(v));
    if (group.length > 1) groups.push(group.sort());
  };
  for (const v of [...arrows.keys()].sort()) if (!index.has(v)) visit(v);
  return groups;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
  const problems = checkImports(root);
  if (problems.length) {
    process.stderr.write(
      `check-imports: ${problems.length} import problem${problems.length === 1 ? '' : 's'} (layers: docs/ARCHITECTURE.md)\n${problems.map((p) => `  ${p}\n`).join('')}`,
    );
    process.exit(1);
  }
}
