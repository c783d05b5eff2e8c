/**
 * A repository's other places: where else the same repository (its first commit) has memory, which a
 * place never reads until the person shares it (`keel memory share FROM`). The faces say so, never share.
 */
import type { OpenMemory } from './open.js';
import { placeOf } from './project.js';

/** Another place with memory: the argument `keel memory share` takes for it, and its item count. */
export interface OtherPlace {
  /** Its folder, or the key alone for items from before memory was kept per place. */
  place: string;
  items: number;
}

/** The repository's other places that hold memory (none outside git). */
export function elsewhere(m: OpenMemory): OtherPlace[] {
  if (m.project.identity === m.project.key) return [];
  return m.memory.store
    .places(m.project.identity)
    .filter((p) => p.project !== m.project.key)
    .map((p) => ({ place: placeOf(p.project) ?? p.project, items: p.items }));
}

/** The one line that tells a person of another place's memory and how to use it here. */
export function notSharedNote(p: OtherPlace): string {
  const where = p.place.startsWith('git:') ? `${p.place} (from before memory was kept per place)` : p.place;
  const n = `${p.items} item${p.items === 1 ? '' : 's'}`;
  return `this repository also has memory at ${where} (${n}), not shared here; to use it here: keel memory share ${p.place}`;
}
