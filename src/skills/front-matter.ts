/**
 * A SKILL.md taken apart: the YAML front matter between `---` lines, and the Markdown body. A repository
 * writes these files, so the front matter is parsed as data only: anchors and aliases (the "billion laughs"
 * bomb) are refused, as are duplicate keys, tags and anything but a mapping at the top.
 */
import { isAlias, isMap, isScalar, isSeq, parseDocument, visit } from 'yaml';

/** Front matter larger than this is refused: a name, a description and a few fields need far less. */
export const MAX_FRONT_MATTER = 8_000;

/** The tags of YAML's core schema: anything else (`!!js/function`, `!custom`) is refused. */
const CORE_TAGS = new Set(
  ['str', 'int', 'float', 'bool', 'null', 'seq', 'map'].map((t) => `tag:yaml.org,2002:${t}`),
);

export type FrontMatter =
  | { ok: true; data: Record<string, unknown>; body: string }
  | { ok: false; error: string };

/** Split and parse; the body is what follows the closing `---` line. */
export function parseSkillFile(text: string): FrontMatter {
  const src = text.replace(/^\uFEFF/, '');
  const open = /^---[ \t]*\r?\n/.exec(src);
  if (!open) return { ok: false, error: 'no front matter (the file must start with a --- line)' };
  const rest = src.slice(open[0].length);
  const close = /^---[ \t]*(?:\r?\n|$)/m.exec(rest);
  if (!close) return { ok: false, error: 'the front matter has no closing --- line' };
  const yamlText = rest.slice(0, close.index);
  if (yamlText.length > MAX_FRONT_MATTER)
    return { ok: false, error: `the front matter is over ${MAX_FRONT_MATTER} characters` };
  const body = rest.slice(close.index + close[0].length);
  const doc = parseDocument(yamlText, { uniqueKeys: true, strict: true, prettyErrors: false });
  if (doc.errors.length) return { ok: false, error: `invalid YAML: ${firstLine(doc.errors[0]?.message)}` };
  let refused: string | undefined;
  visit(doc, (_key, node) => {
    if (isAlias(node) || ((isScalar(node) || isMap(node) || isSeq(node)) && node.anchor)) {
      refused = 'anchors and aliases are not allowed in front matter';
      return visit.BREAK;
    }
    if ((isScalar(node) || isMap(node) || isSeq(node)) && node.tag && !CORE_TAGS.has(node.tag)) {
      refused = `the tag ${node.tag} is not allowed in front matter`;
      return visit.BREAK;
    }
    return undefined;
  });
  if (refused) return { ok: false, error: refused };
  if (doc.contents !== null && !isMap(doc.contents))
    return { ok: false, error: 'the front matter is not a mapping of keys to values' };
  const data = (doc.toJS({ maxAliasCount: 0 }) ?? {}) as Record<string, unknown>;
  return { ok: true, data, body };
}

function firstLine(text: string | undefined): string {
  return (text ?? '').split('\n')[0] ?? '';
}
