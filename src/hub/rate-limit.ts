/** A token bucket per agent, in this process: `rate` requests a second, bursts up to twice that. */
export class RateLimit {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rate: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Take one request's token; false when the agent is over its rate. */
  take(agentId: string): boolean {
    const now = this.now();
    const burst = this.rate * 2;
    const b = this.buckets.get(agentId) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * this.rate);
    b.at = now;
    this.buckets.set(agentId, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }
}
