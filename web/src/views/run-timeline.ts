/**
 * A fix run as it happens, from its own log's stream: the baseline, the plan, each attempt (running,
 * then its verdict with its test counts, files and diff) and the run's end. The same stream feeds the
 * tests-per-attempt chart; a reload replays the log from the start, so what is shown is the log.
 */
import { badge, count, diffBlock, el, replace } from '../dom.js';
import { openStream } from '../stream.js';
import { toLogEvent } from '../transcript.js';
import type { LogEvent } from '../types.js';
import { AttemptChart } from './attempts.js';

const len = (v: unknown): number | null => (Array.isArray(v) ? v.length : typeof v === 'number' ? v : null);
const text = (v: unknown): string => (typeof v === 'string' ? v : '');

export class RunTimeline {
  readonly chart = new AttemptChart();
  readonly root = el(
    'section',
    { class: 'card timeline', attrs: { 'aria-label': 'Run timeline' } },
    el('h2', null, 'As it happens'),
  );
  private readonly list = el('ol', { class: 'steps', attrs: { 'aria-live': 'polite' } });
  private readonly attempts = new Map<number, HTMLLIElement>();
  private readonly status = el('p', { class: 'muted' }, 'Waiting for the baseline…');
  private seq = 0;
  private readonly stop: () => void;

  /** `ended`: called once with the run's end event (the page then reads the report). */
  constructor(id: string, ended: () => void) {
    this.root.append(this.status, this.list);
    this.stop = openStream(id, () => this.seq, {
      frame: (f) => {
        let data: unknown;
        try {
          data = JSON.parse(f.data);
        } catch {
          return;
        }
        const ev = toLogEvent(f.event, data, f.id);
        if (!ev || ev.seq <= this.seq) return;
        this.seq = ev.seq;
        this.chart.see(ev);
        this.see(ev);
        if (ev.type === 'fix_end') ended();
      },
      open: () => {},
      retry: () => {},
      fatal: () => {},
    });
  }

  close(): void {
    this.stop();
  }

  private see(ev: LogEvent): void {
    switch (ev.type) {
      case 'fix_baseline': {
        const passing = len(ev.passing);
        const failing = len(ev.failing);
        this.step(
          'baseline',
          el('h3', null, 'Baseline'),
          el('p', null, el('code', null, text(ev.command)), ` exited ${String(ev.exit_code ?? '?')}`),
          passing !== null && failing !== null
            ? el('p', { class: 'tests' }, `${passing} passed · ${failing} failed`)
            : null,
          Array.isArray(ev.failing) && ev.failing.length
            ? el('p', { class: 'muted' }, `failing: ${ev.failing.map(String).join(', ')}`)
            : null,
        );
        this.status.textContent = 'Planning…';
        return;
      }
      case 'fix_plan':
        this.step(
          'plan',
          el('h3', null, 'Plan'),
          el('pre', { class: 'plan', attrs: { tabindex: '0' } }, text(ev.plan)),
        );
        return;
      case 'fix_attempt': {
        const n = Number(ev.attempt);
        const item = this.step(
          `attempt-${n}`,
          el('h3', null, `Attempt ${n} `, badge('running', 'editing and testing')),
        );
        this.attempts.set(n, item);
        this.status.textContent = `Attempt ${n} running…`;
        return;
      }
      case 'fix_verdict': {
        const n = Number(ev.attempt);
        const item = this.attempts.get(n) ?? this.step(`attempt-${n}`);
        const tests = ev.tests as { passed?: number; failed?: number } | undefined;
        const files = Array.isArray(ev.files) ? ev.files.map(String) : [];
        const patch = text(ev.patch);
        replace(
          item,
          el('h3', null, `Attempt ${n} `, badge(text(ev.status) || 'failed')),
          el('p', null, text(ev.reason)),
          tests
            ? el('p', { class: 'tests' }, `${tests.passed ?? 0} passed · ${tests.failed ?? 0} failed`)
            : null,
          files.length
            ? el('p', { class: 'muted' }, `${count(files.length, 'file')} changed: ${files.join(', ')}`)
            : null,
          patch ? el('details', null, el('summary', null, `Attempt ${n}'s diff`), diffBlock(patch)) : null,
        );
        return;
      }
      case 'fix_end': {
        const status = text(ev.status) || 'failed';
        this.step(
          'end',
          el('h3', null, 'Verdict ', badge(status)),
          el('p', null, `${text(ev.code)}: ${text(ev.reason)}`),
        );
        this.status.textContent = status === 'verified' ? 'Verified.' : 'Ended, not verified.';
        return;
      }
      case 'fix_applied':
        this.step(
          'applied',
          el('h3', null, 'Applied ', badge('verified', 'merged')),
          el('p', null, `${text(ev.into)} fast-forwarded to ${text(ev.commit).slice(0, 12)}`),
        );
        return;
      default:
        return;
    }
  }

  private step(name: string, ...children: Array<Node | null>): HTMLLIElement {
    const item = el('li', { attrs: { 'data-step': name } }, ...children);
    this.list.append(item);
    return item;
  }
}
