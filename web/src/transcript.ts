/** A session's transcript: logged events and live deltas folded into DOM, in seq order, each event once. */
import { badge, count, diffBlock, el, money, short } from './dom.js';
import { linkFileRefs } from './file-links.js';
import { markdown } from './markdown.js';
import type { Delta, LogEvent } from './types.js';

interface CallCard {
  root: HTMLElement;
  decision: HTMLElement;
  outcome: HTMLElement;
  live: HTMLPreElement | null;
}

/** Turn the SSE data of a logged event into one flat event (the server may send the stored row or the event). */
export function toLogEvent(eventName: string, raw: unknown, id: string | null): LogEvent | null {
  if (!raw || typeof raw !== 'object') return null;
  const r = raw as Record<string, unknown>;
  const inner =
    r.data && typeof r.data === 'object' && !Array.isArray(r.data) ? (r.data as Record<string, unknown>) : r;
  const seq = Number(r.seq ?? id);
  if (!Number.isFinite(seq)) return null;
  const type = String(r.type ?? inner.type ?? eventName);
  return { ...inner, type, seq, ...(typeof r.ts === 'string' ? { ts: r.ts } : {}) };
}

export class Transcript {
  readonly root = el('ol', { class: 'transcript', attrs: { 'aria-label': 'Transcript' } });
  lastSeq = 0;
  private calls = new Map<string, CallCard>();
  private liveBlock: { root: HTMLElement; text: HTMLElement; reasoning: HTMLElement | null } | null = null;
  private painted = false;
  /** The text of the last answer shown: a run-ended card whose summary is that answer does not repeat it. */
  private lastAnswer = '';

  /** Apply a logged event; an event at or before the last seq is a replay and is skipped (false). */
  apply(ev: LogEvent): boolean {
    if (ev.seq <= this.lastSeq) return false;
    this.lastSeq = ev.seq;
    const node = this.render(ev);
    if (node) this.push(node);
    return true;
  }

  /** A live delta: streamed text and reasoning of the round in flight, or a running tool's output. */
  delta(d: Delta): void {
    if (typeof d.text !== 'string') return;
    if (d.kind === 'tool_output') {
      const card = d.call_id ? this.calls.get(d.call_id) : undefined;
      if (!card) return;
      if (!card.live) {
        card.live = el('pre', { class: 'output live' });
        card.root.appendChild(card.live);
      }
      card.live.textContent = (card.live.textContent ?? '') + d.text;
      return;
    }
    const live = this.ensureLive();
    if (d.kind === 'reasoning') {
      if (!live.reasoning) {
        const pre = el('pre', { class: 'reasoning' });
        live.root.insertBefore(
          el('details', { class: 'thinking' }, el('summary', null, 'Reasoning…'), pre),
          live.text,
        );
        live.reasoning = pre;
      }
      live.reasoning.textContent = (live.reasoning.textContent ?? '') + d.text;
    } else {
      live.text.textContent = (live.text.textContent ?? '') + d.text;
    }
    this.markPaint();
  }

  /** Drop what was streamed but not logged (after a reconnect the logged message replaces it). */
  dropLive(): void {
    this.liveBlock?.root.remove();
    this.liveBlock = null;
    for (const card of this.calls.values()) {
      card.live?.remove();
      card.live = null;
    }
  }

  private ensureLive() {
    if (!this.liveBlock) {
      const text = el('div', { class: 'text' });
      const root = el(
        'li',
        { class: 'msg assistant streaming', attrs: { 'aria-busy': 'true' } },
        el('h3', null, 'keel'),
        text,
      );
      this.push(root);
      this.liveBlock = { root, text, reasoning: null };
    }
    return this.liveBlock;
  }

  private push(node: HTMLElement): void {
    // the streaming block stays last until its message is logged
    if (this.liveBlock && node !== this.liveBlock.root) this.root.insertBefore(node, this.liveBlock.root);
    else this.root.appendChild(node);
    this.markPaint();
  }

  private markPaint(): void {
    if (this.painted) return;
    this.painted = true;
    requestAnimationFrame(() => performance.mark('keel:first-transcript-paint'));
  }

  private render(ev: LogEvent): HTMLElement | null {
    const s = (k: string) => (typeof ev[k] === 'string' ? (ev[k] as string) : '');
    switch (ev.type) {
      case 'session_start':
        return meta(`session started · ${s('mode')} · ${s('model')}`);
      case 'session_resume':
        return meta(`resumed · ${s('mode')} · ${s('model')}`);
      case 'session_fork':
        return meta(`forked from ${s('from')}`);
      case 'session_settings':
        return meta(
          `next turns: ${[ev.mode ? `mode ${s('mode')}` : '', ev.model ? `model ${s('model')}` : ''].filter(Boolean).join(', ')}`,
        );
      case 'user_message':
        return el(
          'li',
          { class: 'msg user' },
          el('h3', null, 'You'),
          el('div', { class: 'text' }, s('text')),
        );
      case 'assistant_message':
        return this.assistant(ev);
      case 'gate_decision':
        this.decision(ev);
        return null;
      case 'tool_start': {
        const card = this.card(s('call_id'), s('tool'), ev.args);
        card.root.classList.add('running');
        return card.root.isConnected ? null : card.root;
      }
      case 'tool_result':
        this.result(ev);
        return null;
      case 'tool_call_invalid':
        return meta(`invalid call to ${s('tool')}: ${s('error')}`, 'warn');
      case 'model_retry':
        return meta(`model retry ${String(ev.attempt)}: ${s('error')}`, 'warn');
      case 'model_fallback':
        return meta(`fell back from ${s('from')} to ${s('to')}: ${s('error')}`, 'warn');
      case 'compaction':
        return meta(
          `compacted older turns (${String(ev.tokens_before)} → ${String(ev.tokens_after)} tokens)`,
        );
      case 'violation':
        return meta(`${s('tool')} created protected names; removed: ${String(ev.removed)}`, 'warn');
      case 'session_end':
        return this.end(ev);
      default:
        return null;
    }
  }

  private assistant(ev: LogEvent): HTMLElement {
    this.liveBlock?.root.remove();
    this.liveBlock = null;
    const li = el('li', { class: 'msg assistant' }, el('h3', null, 'keel'));
    if (typeof ev.reasoning === 'string' && ev.reasoning) {
      li.appendChild(
        el(
          'details',
          { class: 'thinking' },
          el('summary', null, 'Reasoning'),
          el('pre', { class: 'reasoning' }, ev.reasoning),
        ),
      );
    }
    if (typeof ev.text === 'string' && ev.text) {
      li.appendChild(el('div', { class: 'text md' }, answer(ev.text)));
      this.lastAnswer = ev.text.trim();
    }
    const calls = Array.isArray(ev.tool_calls) ? (ev.tool_calls as Array<Record<string, unknown>>) : [];
    if (calls.length > 0) {
      const list = el('ul', { class: 'calls' });
      for (const c of calls) {
        const card = this.card(String(c.id ?? ''), String(c.name ?? '?'), c.arguments);
        list.appendChild(card.root);
      }
      li.appendChild(list);
    }
    return li;
  }

  private card(callId: string, tool: string, args: unknown): CallCard {
    const existing = this.calls.get(callId);
    if (existing) return existing;
    const decision = el('span', { class: 'decision' });
    const outcome = el('span', { class: 'outcome' });
    const root = el(
      'li',
      { class: 'call', attrs: { 'data-call': callId } },
      el(
        'div',
        { class: 'call-head' },
        el('code', { class: 'tool' }, tool),
        ' ',
        el('span', { class: 'args' }, argsLine(args)),
        decision,
        outcome,
      ),
    );
    const card = { root, decision, outcome, live: null };
    this.calls.set(callId, card);
    return card;
  }

  private decision(ev: LogEvent): void {
    const card = this.card(String(ev.call_id), String(ev.tool), undefined);
    if (!card.root.isConnected) this.push(card.root);
    const d = String(ev.decision);
    card.decision.replaceChildren(badge(d === 'allow' ? 'allowed' : d === 'deny' ? 'denied' : 'asked'));
    const reason = typeof ev.reason === 'string' ? ev.reason : typeof ev.deny === 'string' ? ev.deny : '';
    if (reason) card.decision.appendChild(el('span', { class: 'reason' }, ` ${short(reason, 160)}`));
  }

  private result(ev: LogEvent): void {
    const card = this.card(String(ev.call_id), String(ev.tool), undefined);
    if (!card.root.isConnected) this.push(card.root);
    card.root.classList.remove('running');
    card.live?.remove();
    card.live = null;
    const o = (ev.outcome ?? {}) as {
      exit_code?: number | null;
      tests?: { passed: number; failed: number };
      added?: number;
      removed?: number;
      timed_out?: boolean;
    };
    const bits: string[] = [];
    if (o.exit_code !== undefined && o.exit_code !== null) bits.push(`exit ${o.exit_code}`);
    if (o.timed_out) bits.push('timed out');
    if (o.tests) bits.push(`${o.tests.passed} passed, ${o.tests.failed} failed`);
    if (o.added !== undefined || o.removed !== undefined) bits.push(`+${o.added ?? 0} −${o.removed ?? 0}`);
    if (ev.interrupted) bits.push('interrupted');
    card.outcome.replaceChildren(
      badge(ev.is_error ? 'error' : 'ok'),
      bits.length ? ` ${bits.join(' · ')}` : '',
    );
    card.root.classList.add(ev.is_error ? 'failed' : 'done');
    const output = typeof ev.output === 'string' ? ev.output : '';
    if (output)
      card.root.appendChild(
        el(
          'details',
          { class: 'out' },
          el('summary', null, 'Output'),
          el('pre', { class: 'output' }, output),
        ),
      );
    if (typeof ev.diff === 'string' && ev.diff) {
      card.root.appendChild(
        el(
          'details',
          { class: 'out', attrs: { open: '' } },
          el('summary', null, 'Change'),
          diffBlock(ev.diff),
        ),
      );
    }
  }

  private end(ev: LogEvent): HTMLElement {
    this.dropLive();
    const code = String(ev.code ?? '');
    const tokens = ev.tokens as { input?: number; output?: number } | undefined;
    // the summary is most often the last answer, which the transcript shows just above
    const summary = typeof ev.summary === 'string' ? ev.summary.trim() : '';
    return el(
      'li',
      { class: 'msg end' },
      el('h3', null, 'Run ended ', badge(code)),
      summary && summary !== this.lastAnswer ? el('div', { class: 'text md' }, answer(summary)) : null,
      ev.finish === 'length'
        ? el(
            'p',
            { class: 'cut' },
            'The answer was cut at the output limit (max_output_tokens); raise it for the whole answer.',
          )
        : null,
      el(
        'p',
        { class: 'facts' },
        `${count(Number(ev.rounds ?? 0), 'round')} · ${count((tokens?.input ?? 0) + (tokens?.output ?? 0), 'token')} · ${money(ev.cost_usd as number | null)}`,
      ),
    );
  }
}

function meta(text: string, kind = ''): HTMLElement {
  return el('li', { class: `meta ${kind}` }, text);
}

/**
 * A call's arguments on one line: the path or command when there is one, else `name: value` pairs; a
 * call without arguments (`run_tests {}`) shows only its tool's name.
 */
export function argsLine(args: unknown): string {
  let value = args;
  if (typeof args === 'string') {
    try {
      value = JSON.parse(args);
    } catch {
      return short(args, 140);
    }
  }
  if (value === undefined || value === null) return '';
  if (typeof value !== 'object' || Array.isArray(value)) return short(JSON.stringify(value), 140);
  const a = value as Record<string, unknown>;
  for (const key of ['path', 'command', 'pattern', 'task', 'query', 'name']) {
    if (typeof a[key] === 'string') return short(a[key] as string, 140);
  }
  const pairs = Object.entries(a)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return short(pairs.join(' · '), 140);
}

/** An answer's Markdown, with its "path:line" references linked to the file viewer. */
function answer(text: string): DocumentFragment {
  const fragment = markdown(text);
  linkFileRefs(fragment);
  return fragment;
}
