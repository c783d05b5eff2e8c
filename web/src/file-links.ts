/**
 * "path:line" in an answer (`src/app.ts:42`, `README.md:3:7`) becomes a link to the project file at that
 * line in the viewer. Only text nodes are rewritten (a new element per match, text as text), and text
 * already inside a link stays as it is. A host and port (`127.0.0.1:8080`, `example.com:443`) is not a
 * path: the extension must start with a letter, a `//` or `@` before the name rules it out, and a name
 * whose last part is a web domain's (`.com`, `.org`, `.io`…) is a host, not a file.
 */
const REF = /(?<![\w/.@:-])((?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]*):(\d+)(?::\d+)?(?![\w/])/g;

const HOSTS = /\.(?:com|org|net|edu|gov|io|dev|co|ai|app|info|biz|local|localhost|internal)$/i;

/** The viewer's address of `path` at `line`. */
export function fileHref(path: string, line?: number): string {
  return `#/files/${encodeURI(path)}${line ? `:${line}` : ''}`;
}

/** Link every path:line reference in `root`'s text. */
export function linkFileRefs(root: DocumentFragment | HTMLElement): void {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!(n.parentElement?.closest('a') ?? null)) nodes.push(n as Text);
  }
  for (const node of nodes) {
    const text = node.data;
    if (![...text.matchAll(REF)].some((m) => !HOSTS.test(m[1] ?? ''))) continue;
    const out = document.createDocumentFragment();
    let at = 0;
    for (const m of text.matchAll(REF)) {
      if (HOSTS.test(m[1] ?? '')) continue;
      const start = m.index ?? 0;
      out.append(text.slice(at, start));
      const a = document.createElement('a');
      a.className = 'file-ref';
      a.href = fileHref(m[1] ?? '', Number(m[2]));
      a.textContent = m[0];
      out.append(a);
      at = start + m[0].length;
    }
    out.append(text.slice(at));
    node.replaceWith(out);
  }
}
