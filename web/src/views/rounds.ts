/** A session's tokens and spend per round, charted from the assistant messages of the log the page follows. */
import { barChart, describe, type Group } from '../chart.js';
import { el, replace } from '../dom.js';
import type { LogEvent } from '../types.js';

interface Round {
  tokens: number;
  cost: number | null;
}

/** Exact spend as text: small sums keep their digits (the chart's value must be the log's). */
function usd(cost: number | null): string {
  return cost === null ? 'no price' : `$${Number(cost.toPrecision(6))}`;
}

export class RoundCharts {
  readonly root = el(
    'section',
    { class: 'card rounds', attrs: { hidden: '', 'aria-label': 'Per round' } },
    el('h2', null, 'Per round'),
  );
  private readonly body = el('div', { class: 'charts' });
  private readonly rounds: Round[] = [];
  private dirty = false;

  constructor() {
    this.root.append(this.body);
  }

  /** Take a logged event; true when it was a round (the charts are redrawn by `paint`). */
  apply(ev: LogEvent): boolean {
    if (ev.type !== 'assistant_message') return false;
    const u = ev.usage as { input?: number; output?: number } | undefined;
    const cost = typeof ev.cost_usd === 'number' ? ev.cost_usd : null;
    this.rounds.push({ tokens: (u?.input ?? 0) + (u?.output ?? 0), cost });
    this.dirty = true;
    return true;
  }

  paint(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const label = (i: number) => `R${i + 1}`;
    const tokens: Group[] = this.rounds.map((r, i) => ({
      label: label(i),
      bars: [{ series: 'tokens', value: r.tokens, text: String(r.tokens) }],
    }));
    const spend: Group[] = this.rounds.map((r, i) => ({
      label: label(i),
      bars: [{ series: 'spend', value: r.cost ?? 0, text: usd(r.cost) }],
    }));
    replace(
      this.body,
      el(
        'figure',
        null,
        barChart({ title: 'Tokens per round', desc: describe(tokens), groups: tokens }),
        el('figcaption', null, 'Tokens per round (input + output)'),
      ),
      el(
        'figure',
        null,
        barChart({ title: 'Spend per round', desc: describe(spend), groups: spend }),
        el('figcaption', null, 'Spend per round (USD)'),
      ),
    );
    this.root.hidden = this.rounds.length === 0;
  }
}
