/**
 * Group commit: the writes of concurrent requests share one transaction. An operation waits at most
 * `windowMs` (or until `maxOps` are waiting, or the commit before it ends) and its promise settles only
 * after the transaction holding it has committed: an answer is never sent for a write that is not
 * durable. One operation that throws rolls the transaction back; the others are run again without it.
 */
import type { Sql, Store } from '../store/engine.js';

interface Pending {
  op: (tx: Sql) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

class OpFailed extends Error {
  constructor(
    readonly index: number,
    readonly error: unknown,
  ) {
    super('an operation of the batch failed');
  }
}

export interface GroupCommitOptions {
  windowMs?: number;
  maxOps?: number;
  /** Transactions in flight at once (1 on SQLite, whose writer is one; a few on PostgreSQL). */
  parallel?: number;
  /** Called after each commit with the number of operations it carried. */
  onCommit?(ops: number): void;
}

export class GroupCommit {
  private readonly queue: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private readonly windowMs: number;
  private readonly maxOps: number;
  private readonly parallel: number;

  constructor(
    private readonly store: Store,
    private readonly opts: GroupCommitOptions = {},
  ) {
    this.windowMs = opts.windowMs ?? 1;
    this.maxOps = opts.maxOps ?? 48;
    this.parallel = opts.parallel ?? 1;
  }

  /** Run `op` in the next shared transaction; settles after that transaction commits. */
  run<T>(op: (tx: Sql) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, resolve: resolve as (v: unknown) => void, reject });
      if (this.queue.length >= this.maxOps) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.windowMs);
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.inFlight >= this.parallel || !this.queue.length) return;
    const batch = this.queue.splice(0, this.maxOps);
    this.inFlight++;
    void this.commit(batch).finally(() => {
      this.inFlight--;
      // what came in meanwhile has waited a whole commit: no window more
      if (this.queue.length) this.flush();
    });
  }

  private async commit(batch: Pending[]): Promise<void> {
    let ops = batch;
    let retried = false;
    while (ops.length) {
      const current = ops;
      try {
        const results = await this.store.transaction(async (tx) => {
          const out: unknown[] = [];
          for (const [i, p] of current.entries()) {
            try {
              out.push(await p.op(tx));
            } catch (err) {
              throw new OpFailed(i, err);
            }
          }
          return out;
        });
        this.opts.onCommit?.(current.length);
        for (const [i, p] of current.entries()) p.resolve(results[i]);
        return;
      } catch (err) {
        if (!(err instanceof OpFailed)) {
          // the store's own retries are spent (a deadlock with another hub process, a lost connection):
          // one more try of the whole batch, then every operation of it fails
          if (!retried) {
            retried = true;
            continue;
          }
          for (const p of current) p.reject(err);
          return;
        }
        current[err.index]?.reject(err.error);
        ops = current.filter((_, i) => i !== err.index);
      }
    }
  }

  /** Wait until every operation handed in so far has settled. */
  async drain(): Promise<void> {
    while (this.queue.length || this.inFlight) await new Promise((r) => setTimeout(r, 2));
  }
}
