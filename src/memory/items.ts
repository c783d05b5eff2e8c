/** What a memory item is: its kinds, who wrote it, and how long each kind is kept before it is archived. */

/** Observations keel records from sessions, and notes a person or the model writes. */
export const KINDS = [
  'file_changed',
  'test_outcome',
  'gate_denial',
  'fix_verdict',
  'decision',
  'note',
] as const;
export type Kind = (typeof KINDS)[number];

/** Who wrote an item: a person, the model (its notes are marked), or keel itself (observations of a session). */
export const AUTHORS = ['user', 'model', 'keel'] as const;
export type Author = (typeof AUTHORS)[number];

/** How far an author's word goes when duplicates fold: a person's outranks keel's, keel's the model's. */
export const AUTHOR_RANK: Record<Author, number> = { model: 0, keel: 1, user: 2 };

const DAY_MS = 86_400_000;

/**
 * Days each kind is kept after its last sighting (a folded duplicate renews it); null: kept until forgotten.
 * Observations go stale as the code moves on; what a person decided or wrote down does not.
 */
export const EXPIRY_DAYS: Record<Kind, number | null> = {
  file_changed: 30,
  test_outcome: 14,
  gate_denial: 30,
  fix_verdict: 90,
  decision: 365,
  note: null,
};

/** When an item of `kind` seen at `at` expires (ISO), or null for one that never does. */
export function expiryFor(kind: Kind, at: Date): string | null {
  const days = EXPIRY_DAYS[kind];
  return days === null ? null : new Date(at.getTime() + days * DAY_MS).toISOString();
}

/** A stored memory item as every face shows it (no vectors). */
export interface MemoryItem {
  id: string;
  project: string;
  kind: Kind;
  text: string;
  tags: string[];
  session_id: string | null;
  author: Author;
  created_at: string;
  updated_at: string;
  expires_at: string | null;
  hash: string;
  /** The place it was shared from (`keel memory share`), as a project key; null when it was made here. */
  origin: string | null;
}
