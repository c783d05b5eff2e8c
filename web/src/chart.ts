/**
 * Small bar charts drawn as SVG in the page from numbers it already has (no library, no server
 * rendering). Readable without colour: every bar carries its value as text, every group its label,
 * and the chart has an accessible name and a description that lists the figures.
 */

const SVG = 'http://www.w3.org/2000/svg';

/** One bar: its series (a class for the hue, and a word in its value text) and its value. */
export interface Bar {
  series: string;
  value: number;
  /** The value as shown on the bar (e.g. "$0.0012", "3 passed"). */
  text: string;
}

export interface Group {
  /** Under the bars (e.g. "R1", "A2"). */
  label: string;
  bars: Bar[];
}

let charts = 0;

function node<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
}

/** A grouped bar chart: one group per round or attempt, one bar per series, each bar labelled with its value. */
export function barChart(opts: { title: string; desc: string; groups: Group[] }): SVGSVGElement {
  const id = `chart-${++charts}`;
  const perGroup = Math.max(1, ...opts.groups.map((g) => g.bars.length));
  // wide enough for the longest value text (about 6.5 px a character at 11 px)
  const longest = Math.max(0, ...opts.groups.flatMap((g) => g.bars.map((b) => b.text.length)));
  const barW = Math.max(44, Math.ceil(longest * 6.5) + 8);
  const gap = 14;
  const groupW = perGroup * barW + gap;
  const top = 22;
  const plotH = 100;
  const bottom = 22;
  const width = Math.max(200, opts.groups.length * groupW + gap);
  const height = top + plotH + bottom;
  const max = Math.max(0, ...opts.groups.flatMap((g) => g.bars.map((b) => b.value)));
  const svg = node('svg', {
    class: 'chart',
    role: 'img',
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    'aria-labelledby': `${id}-t`,
    'aria-describedby': `${id}-d`,
  });
  svg.append(node('title', { id: `${id}-t` }, opts.title), node('desc', { id: `${id}-d` }, opts.desc));
  svg.append(node('line', { class: 'axis', x1: 0, x2: width, y1: top + plotH + 0.5, y2: top + plotH + 0.5 }));
  opts.groups.forEach((g, gi) => {
    const x0 = gap + gi * groupW;
    const group = node('g', { class: 'group', 'data-label': g.label });
    g.bars.forEach((b, bi) => {
      const h = max > 0 ? Math.round((b.value / max) * plotH) : 0;
      const x = x0 + bi * barW;
      const bar = node('g', { class: `bar ${b.series}`, 'data-series': b.series, 'data-value': b.value });
      bar.append(
        node('rect', { x: x + 2, y: top + plotH - h, width: barW - 4, height: h }),
        node('text', { class: 'value', x: x + barW / 2, y: top + plotH - h - 4 }, b.text),
      );
      group.append(bar);
    });
    group.append(
      node('text', { class: 'label', x: x0 + (g.bars.length * barW) / 2, y: top + plotH + 16 }, g.label),
    );
    svg.append(group);
  });
  return svg;
}

/** The figures of a chart as one sentence, for its description. */
export function describe(groups: Group[]): string {
  return groups.map((g) => `${g.label}: ${g.bars.map((b) => b.text).join(', ')}`).join('; ');
}

/** One point of a line over time: seconds from the start, its value, and the value as shown. */
export interface Point {
  x: number;
  value: number;
  text: string;
}

/**
 * A value over time (a batch's spend as it grew) as a stepped line: each point a dot with its value as
 * text (at most `labels` of them, the last always), the time axis labelled in seconds from the start.
 */
export function lineChart(opts: {
  title: string;
  desc: string;
  points: Point[];
  labels?: number;
}): SVGSVGElement {
  const id = `chart-${++charts}`;
  const left = 12;
  const right = 70;
  const top = 22;
  const plotH = 110;
  const bottom = 24;
  const width = 560;
  const height = top + plotH + bottom;
  const span = Math.max(1, ...opts.points.map((p) => p.x));
  const max = Math.max(0, ...opts.points.map((p) => p.value));
  const px = (x: number) => left + (x / span) * (width - left - right);
  const py = (v: number) => top + plotH - (max > 0 ? (v / max) * plotH : 0);
  const svg = node('svg', {
    class: 'chart line',
    role: 'img',
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    'aria-labelledby': `${id}-t`,
    'aria-describedby': `${id}-d`,
  });
  svg.append(node('title', { id: `${id}-t` }, opts.title), node('desc', { id: `${id}-d` }, opts.desc));
  svg.append(
    node('line', {
      class: 'axis',
      x1: left,
      x2: width - right,
      y1: top + plotH + 0.5,
      y2: top + plotH + 0.5,
    }),
  );
  // a step line: the value holds until the next call adds to it
  let d = `M ${px(0)} ${py(0)}`;
  for (const p of opts.points) d += ` H ${px(p.x)} V ${py(p.value)}`;
  svg.append(node('path', { class: 'trace', d, fill: 'none' }));
  const every = Math.max(1, Math.ceil(opts.points.length / (opts.labels ?? 8)));
  opts.points.forEach((p, i) => {
    const point = node('g', { class: 'point', 'data-value': p.value, 'data-x': p.x });
    point.append(node('circle', { cx: px(p.x), cy: py(p.value), r: 3 }));
    if (i % every === 0 || i === opts.points.length - 1)
      point.append(node('text', { class: 'value', x: px(p.x) + 4, y: py(p.value) - 6 }, p.text));
    svg.append(point);
  });
  for (const x of [0, span]) {
    svg.append(node('text', { class: 'label', x: px(x), y: top + plotH + 16 }, `+${Math.round(x)} s`));
  }
  return svg;
}
