/**
 * A small, tolerant XML reader for test reports: elements, attributes, text, CDATA, comments and
 * entities. It never throws; a report cut short by a killed runner yields whatever was complete.
 */

/** One XML element with its attributes, child elements and its own text (CDATA included). */
export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  text: string;
}

const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** Replace XML entities and character references; unknown entities are left as written. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|[a-zA-Z]+);/g, (whole, ref: string) => {
    if (ref.startsWith('#x')) return codePoint(Number.parseInt(ref.slice(2), 16), whole);
    if (ref.startsWith('#')) return codePoint(Number.parseInt(ref.slice(1), 10), whole);
    return NAMED[ref] ?? whole;
  });
}

function codePoint(n: number, fallback: string): string {
  try {
    return String.fromCodePoint(n);
  } catch {
    return fallback;
  }
}

/** Parse an XML document into a synthetic root element whose children are the top-level elements. */
export function parseXml(text: string): XmlElement {
  const root: XmlElement = { name: '#document', attrs: {}, children: [], text: '' };
  const stack: XmlElement[] = [root];
  const top = (): XmlElement => stack[stack.length - 1] ?? root;
  let i = 0;
  while (i < text.length) {
    const lt = text.indexOf('<', i);
    if (lt < 0) {
      top().text += decodeEntities(text.slice(i));
      break;
    }
    if (lt > i) top().text += decodeEntities(text.slice(i, lt));
    if (text.startsWith('<!--', lt)) {
      i = skipPast(text, lt, '-->');
    } else if (text.startsWith('<![CDATA[', lt)) {
      const end = text.indexOf(']]>', lt);
      top().text += text.slice(lt + 9, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end + 3;
    } else if (text.startsWith('<?', lt)) {
      i = skipPast(text, lt, '?>');
    } else if (text.startsWith('<!', lt)) {
      i = skipPast(text, lt, '>');
    } else if (text.startsWith('</', lt)) {
      const end = text.indexOf('>', lt);
      const name = text.slice(lt + 2, end < 0 ? text.length : end).trim();
      // close up to the matching element; a stray end tag is ignored
      const at = stack.map((el) => el.name).lastIndexOf(name);
      if (at > 0) stack.length = at;
      i = end < 0 ? text.length : end + 1;
    } else {
      const end = tagEnd(text, lt);
      if (end < 0) break;
      const inner = text.slice(lt + 1, end);
      const selfClosing = inner.endsWith('/');
      const body = selfClosing ? inner.slice(0, -1) : inner;
      const nameMatch = /^[^\s/>]+/.exec(body);
      const element: XmlElement = {
        name: nameMatch?.[0] ?? '',
        attrs: parseAttrs(body.slice(nameMatch?.[0].length ?? 0)),
        children: [],
        text: '',
      };
      top().children.push(element);
      if (!selfClosing) stack.push(element);
      i = end + 1;
    }
  }
  return root;
}

function skipPast(text: string, from: number, marker: string): number {
  const end = text.indexOf(marker, from);
  return end < 0 ? text.length : end + marker.length;
}

/** The index of the `>` closing a start tag, skipping `>` inside quoted attribute values. */
function tagEnd(text: string, from: number): number {
  let quote: string | undefined;
  for (let i = from + 1; i < text.length; i++) {
    const ch = text[i];
    if (quote !== undefined) {
      if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
    } else if (ch === '>') {
      return i;
    }
  }
  return -1;
}

function parseAttrs(text: string): Record<string, string> {
  const attrs: Record<string, string> = {};
  for (const match of text.matchAll(/([^\s=]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
    const name = match[1];
    if (name !== undefined) attrs[name] = decodeEntities(match[2] ?? match[3] ?? '');
  }
  return attrs;
}

/** Every element named `name` under `el`, depth first, in document order. */
export function findAll(el: XmlElement, name: string): XmlElement[] {
  const out: XmlElement[] = [];
  const visit = (node: XmlElement): void => {
    for (const child of node.children) {
      if (child.name === name) out.push(child);
      visit(child);
    }
  };
  visit(el);
  return out;
}
