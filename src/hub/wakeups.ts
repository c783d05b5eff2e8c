/**
 * Waking the streams of this process when their agent has something new. A write here wakes its
 * recipients at once; on PostgreSQL it also hints the other hub processes (LISTEN/NOTIFY, coalesced
 * by the store), and a hint heard wakes every stream of this process, which re-reads its rows. A wake
 * is never data: a stream that misses one finds the rows at its next read.
 */
import type { Store } from '../store/engine.js';

export const HUB_CHANNEL = 'keel_hub';

export class Wakeups {
  private readonly waiters = new Map<string, Set<() => void>>();
  private stopListening: (() => Promise<void>) | undefined;

  constructor(private readonly store: Store) {}

  /** Hear the other processes' hints (PostgreSQL; SQLite's hub is one process). */
  async start(): Promise<void> {
    if (this.store.dialect === 'postgres')
      this.stopListening = await this.store.listen(HUB_CHANNEL, () => this.all());
  }

  /** Wake these agents' streams here, and tell the other processes. */
  notify(agentIds: Iterable<string>): void {
    for (const id of agentIds) for (const wake of this.waiters.get(id) ?? []) wake();
    if (this.store.dialect === 'postgres') this.store.hint(HUB_CHANNEL);
  }

  private all(): void {
    for (const set of this.waiters.values()) for (const wake of set) wake();
  }

  /**
   * A waiter for one agent: `wait(ms)` resolves true when woken, false after `ms`. A wake that comes
   * while nobody waits is kept for the next wait, so none is lost between two reads.
   */
  subscribe(agentId: string): { wait(ms: number): Promise<boolean>; wake(): void; close(): void } {
    let pending = false;
    let resolveWait: ((woken: boolean) => void) | undefined;
    const wake = () => {
      if (resolveWait) {
        const r = resolveWait;
        resolveWait = undefined;
        r(true);
      } else pending = true;
    };
    let set = this.waiters.get(agentId);
    if (!set) {
      set = new Set();
      this.waiters.set(agentId, set);
    }
    set.add(wake);
    return {
      wait: (ms) => {
        if (pending) {
          pending = false;
          return Promise.resolve(true);
        }
        return new Promise<boolean>((resolve) => {
          const timer = setTimeout(
            () => {
              resolveWait = undefined;
              resolve(false);
            },
            Math.max(0, ms),
          );
          resolveWait = (woken) => {
            clearTimeout(timer);
            resolve(woken);
          };
        });
      },
      wake,
      close: () => {
        set.delete(wake);
        if (!set.size) this.waiters.delete(agentId);
        wake();
      },
    };
  }

  async close(): Promise<void> {
    await this.stopListening?.();
  }
}
