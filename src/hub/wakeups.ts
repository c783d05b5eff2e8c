/**
 * Waking the streams of this process when their agent has something new. A write here wakes its
 * recipients at once; on PostgreSQL it also hints the other hub processes (LISTEN/NOTIFY, coalesced
 * by the store). A hint heard (this process hears its own too) asks the store once which of this
 * process's agents have queued messages and wakes those: one query per hint, never one per stream (a
 * hint waking every stream made each re-read its rows, 100 reads for one message with 100 streams).
 * While that query runs, further hints fold into one more. A wake is never data: a stream that misses
 * one finds the rows at its next read.
 */
import type { Store } from '../store/engine.js';

export const HUB_CHANNEL = 'keel_hub';

export class Wakeups {
  private readonly waiters = new Map<string, Set<() => void>>();
  private stopListening: (() => Promise<void>) | undefined;
  private checking = false;
  private heardMeanwhile = false;
  private queuedAmong: ((agentIds: string[]) => Promise<string[]>) | undefined;

  constructor(private readonly store: Store) {}

  /**
   * Hear the other processes' hints (PostgreSQL; SQLite's hub is one process). `queuedAmong` says which
   * of the given agents have queued messages; without it a hint wakes every stream.
   */
  async start(queuedAmong?: (agentIds: string[]) => Promise<string[]>): Promise<void> {
    this.queuedAmong = queuedAmong;
    if (this.store.dialect === 'postgres')
      this.stopListening = await this.store.listen(HUB_CHANNEL, () => this.heard());
  }

  private heard(): void {
    if (this.checking) {
      this.heardMeanwhile = true;
      return;
    }
    const ids = [...this.waiters.keys()];
    if (!ids.length) return;
    if (!this.queuedAmong) {
      this.all();
      return;
    }
    this.checking = true;
    this.queuedAmong(ids)
      .then(
        (queued) => {
          for (const id of queued) for (const wake of this.waiters.get(id) ?? []) wake();
        },
        // the store failed for a moment: every stream looks for itself
        () => this.all(),
      )
      .finally(() => {
        this.checking = false;
        if (this.heardMeanwhile) {
          this.heardMeanwhile = false;
          this.heard();
        }
      });
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
