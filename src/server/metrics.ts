/** The server's counters, as Prometheus text: sessions by state, tokens, cost, tool calls by decision, latency. */
import type { SessionEvent } from '../agent/events.js';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  private tokens = 0;
  private cost = 0;
  private readonly decisions = new Map<string, number>();
  private readonly requests = new Map<string, { buckets: number[]; sum: number; count: number }>();

  /** Count what a stored event says (called for every event of every session the server runs). */
  event(event: SessionEvent): void {
    if (event.type === 'assistant_message') {
      this.tokens += event.usage.input + event.usage.output;
      if (event.cost_usd !== null) this.cost += event.cost_usd;
    } else if (event.type === 'gate_decision') {
      this.decisions.set(event.decision, (this.decisions.get(event.decision) ?? 0) + 1);
    }
  }

  request(route: string, status: number, seconds: number): void {
    const key = `route="${route.replace(/["\\\n]/g, '_')}",code="${Math.floor(status / 100)}xx"`;
    let h = this.requests.get(key);
    if (!h) {
      h = { buckets: BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.requests.set(key, h);
    }
    BUCKETS.forEach((b, i) => {
      if (seconds <= b) (h.buckets[i] as number)++;
    });
    h.sum += seconds;
    h.count++;
  }

  render(sessions: { running: number; waiting: number }): string {
    const lines = [
      '# HELP keel_sessions Sessions with a turn in this server, by state.',
      '# TYPE keel_sessions gauge',
      `keel_sessions{state="running"} ${sessions.running}`,
      `keel_sessions{state="waiting"} ${sessions.waiting}`,
      '# HELP keel_tokens_total Tokens the model read and wrote for this server.',
      '# TYPE keel_tokens_total counter',
      `keel_tokens_total ${this.tokens}`,
      '# HELP keel_cost_usd_total What those tokens cost, where a price is configured.',
      '# TYPE keel_cost_usd_total counter',
      `keel_cost_usd_total ${this.cost}`,
      '# HELP keel_tool_calls_total Tool calls by the gate decision.',
      '# TYPE keel_tool_calls_total counter',
    ];
    for (const decision of ['allow', 'deny', 'ask'])
      lines.push(`keel_tool_calls_total{decision="${decision}"} ${this.decisions.get(decision) ?? 0}`);
    lines.push(
      '# HELP keel_http_request_duration_seconds HTTP request latency.',
      '# TYPE keel_http_request_duration_seconds histogram',
    );
    for (const [key, h] of this.requests) {
      for (const [i, b] of BUCKETS.entries())
        lines.push(`keel_http_request_duration_seconds_bucket{${key},le="${b}"} ${h.buckets[i]}`);
      lines.push(`keel_http_request_duration_seconds_bucket{${key},le="+Inf"} ${h.count}`);
      lines.push(`keel_http_request_duration_seconds_sum{${key}} ${h.sum}`);
      lines.push(`keel_http_request_duration_seconds_count{${key}} ${h.count}`);
    }
    return `${lines.join('\n')}\n`;
  }
}
