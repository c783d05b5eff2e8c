/**
 * The routing tiers' share of a run's calls and of its cost (a batch's, a fix run's): two charts, since a
 * count and dollars share no scale, each bar saying its value and its share (readable without colour).
 */
import { barChart, describe, type Group } from './chart.js';
import { el, money } from './dom.js';

export interface TierShare {
  /** The tier's name; a call routed by no tier counts as "untiered". */
  tier: string;
  calls: number;
  cost_usd: number;
}

/** Dollars to a hundredth of a cent below $1: a run's calls cost fractions of a cent. */
export const usd = (v: number | null | undefined): string =>
  v === null || v === undefined ? '—' : Math.abs(v) < 1 ? `$${v.toFixed(4)}` : money(v);

/** The share of a whole as a whole percent ("67%"). */
const share = (part: number, whole: number): string => `${whole > 0 ? Math.round((part / whole) * 100) : 0}%`;

/** A chart wider than a phone scrolls inside its figure, which the keyboard can reach to scroll it. */
const FIG = { attrs: { tabindex: '0' } };

/** Each tier's calls and cost, from ledger rows (their tier and cost). */
export function tierShares(calls: Array<{ tier: string | null; cost_usd: number | null }>): TierShare[] {
  const tiers = new Map<string, TierShare>();
  for (const c of calls) {
    const tier = c.tier ?? 'untiered';
    const t = tiers.get(tier) ?? { tier, calls: 0, cost_usd: 0 };
    t.calls += 1;
    t.cost_usd += c.cost_usd ?? 0;
    tiers.set(tier, t);
  }
  return [...tiers.values()];
}

/** The two charts; none when no call was routed by a tier (there is nothing to compare). */
export function tierCharts(tiers: TierShare[]): HTMLElement[] {
  if (!tiers.length || tiers.every((t) => t.tier === 'untiered')) return [];
  const calls = tiers.reduce((a, t) => a + t.calls, 0);
  const cost = tiers.reduce((a, t) => a + t.cost_usd, 0);
  const callGroups: Group[] = tiers.map((t) => ({
    label: t.tier,
    bars: [{ series: 'calls', value: t.calls, text: `${t.calls} (${share(t.calls, calls)})` }],
  }));
  const costGroups: Group[] = tiers.map((t) => ({
    label: t.tier,
    bars: [{ series: 'spend', value: t.cost_usd, text: `${usd(t.cost_usd)} (${share(t.cost_usd, cost)})` }],
  }));
  return [
    el(
      'figure',
      { ...FIG, class: 'tiers-calls' },
      barChart({ title: 'Calls by routing tier', desc: describe(callGroups), groups: callGroups }),
      el('figcaption', null, 'Calls by routing tier: each bar says its calls and their share'),
    ),
    el(
      'figure',
      { ...FIG, class: 'tiers-cost' },
      barChart({ title: 'Cost by routing tier', desc: describe(costGroups), groups: costGroups }),
      el('figcaption', null, 'Cost by routing tier: each bar says its dollars and their share'),
    ),
  ];
}
