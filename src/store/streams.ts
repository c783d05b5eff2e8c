/**
 * Numbered streams. A global sequence is the wrong cursor for a reader: PostgreSQL hands out sequence
 * values at insert and commits them in any order, so a reader that saw 8 may later find 7 committed
 * behind it. Here each stream's number is taken by bumping its row, which holds the row's lock until
 * the transaction ends: the next writer of that stream waits, and numbers commit in order.
 */
import type { Sql } from './engine.js';

/** The next number of `stream` (1, 2, …), taken inside the caller's transaction. */
export async function nextSeq(tx: Sql, stream: string): Promise<number> {
  const rows = await tx.query<{ last_seq: number }>(
    `INSERT INTO streams (name, last_seq) VALUES ($1, 1)
     ON CONFLICT (name) DO UPDATE SET last_seq = streams.last_seq + 1
     RETURNING last_seq`,
    [stream],
  );
  const seq = rows[0]?.last_seq;
  if (seq === undefined) throw new Error(`stream ${stream}: no number returned`);
  return Number(seq);
}
