/** A fix run's tests passed and failed at its baseline and after each attempt, charted from the run's log. */
import { barChart, describe, type Group } from '../chart.js';
import { el, replace } from '../dom.js';
import type { LogEvent } from '../types.js';

const count = (v: unknown): number | null => (Array.isArray(v) ? v.length : typeof v === 'number' ? v : null);

/** Fed the run's events (run-timeline.ts reads its stream once for the chart and the timeline). */
export class AttemptChart {
  readonly root = el(
    'section',
    { class: 'card attempts', attrs: { hidden: '', 'aria-label': 'Tests per attempt' } },
    el('h2', null, 'Tests per attempt'),
  );
  private readonly body = el('div', { class: 'charts' });
  private readonly groups: Group[] = [];

  constructor() {
    this.root.append(this.body);
  }

  see(ev: LogEvent): void {
    if (ev.type === 'fix_baseline') this.add('baseline', count(ev.passing), count(ev.failing));
    const tests = ev.tests as { passed?: number; failed?: number } | undefined;
    if (ev.type === 'fix_verdict' && tests)
      this.add(`attempt ${ev.attempt}`, tests.passed ?? null, tests.failed ?? null);
  }

  private add(label: string, passed: number | null, failed: number | null): void {
    if (passed === null || failed === null) return;
    this.groups.push({
      label,
      bars: [
        { series: 'passed', value: passed, text: `${passed} passed` },
        { series: 'failed', value: failed, text: `${failed} failed` },
      ],
    });
    replace(
      this.body,
      el(
        'figure',
        // wider than a phone it scrolls inside its figure, which the keyboard can reach to scroll it
        { attrs: { tabindex: '0' } },
        barChart({ title: 'Tests per attempt', desc: describe(this.groups), groups: this.groups }),
        el('figcaption', null, 'Tests passed and failed at the baseline and after each attempt'),
      ),
    );
    this.root.hidden = false;
  }
}
