/**
 * Building DOM nodes from data. Strings always become text nodes: model and repository text is never
 * markup (Markdown goes through markdown.ts, which renders it without raw HTML and sanitizes the result).
 */

export type Child = Node | string | number | null | undefined | false;

export interface Props {
  class?: string;
  /** Attributes set with setAttribute (never an event handler attribute). */
  attrs?: Record<string, string | undefined>;
  on?: { [K in keyof HTMLElementEventMap]?: (ev: HTMLElementEventMap[K]) => void };
}

/** Create an element with a class, attributes, listeners and children (text or nodes). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props?.class) node.className = props.class;
  for (const [name, value] of Object.entries(props?.attrs ?? {})) {
    if (value !== undefined && !/^on/i.test(name)) node.setAttribute(name, value);
  }
  for (const [name, handler] of Object.entries(props?.on ?? {})) {
    node.addEventListener(name, handler as EventListener);
  }
  append(node, ...children);
  return node;
}

/** Append children; strings and numbers as text nodes. */
export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** Replace every child of `parent`. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, ...children);
}

/** A unified diff as coloured lines: additions, removals, hunk headers and file headers. */
export function diffBlock(diff: string): HTMLElement {
  const pre = el('pre', { class: 'diff' });
  for (const line of diff.replace(/\n$/, '').split('\n')) {
    let kind = 'ctx';
    if (
      line.startsWith('+++') ||
      line.startsWith('---') ||
      line.startsWith('diff ') ||
      line.startsWith('index ')
    )
      kind = 'meta';
    else if (line.startsWith('@@')) kind = 'hunk';
    else if (line.startsWith('+')) kind = 'add';
    else if (line.startsWith('-')) kind = 'del';
    pre.appendChild(el('span', { class: `line ${kind}` }, line, '\n'));
  }
  return pre;
}

/** Money as people read it; null is "no price". */
export function money(usd: number | null | undefined): string {
  if (usd === null || usd === undefined) return '—';
  return usd < 0.01 && usd > 0 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/** A timestamp in the reader's local time; a bad value shows as it came. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** A state badge: the words plus a class for its colour (the words alone carry the meaning). */
export function badge(state: string, label = state): HTMLElement {
  const safe = /^[a-z_-]+$/i.test(state) ? state.toLowerCase() : 'other';
  return el('span', { class: `badge s-${safe}` }, label);
}

/** What a session's state is called on the page: a question waiting is "waiting for approval". */
export function stateBadge(state: string): HTMLElement {
  return badge(state, state === 'waiting' ? 'waiting for approval' : state);
}

/** "1 subagent", "2 subagents". */
export function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** At most `n` characters of a one-line text. */
export function short(text: string, n = 120): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > n ? `${line.slice(0, n - 1)}…` : line;
}
