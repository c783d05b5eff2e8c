/** Reading untyped JSON from runner reports without casts at every step. */

/** A property of an unknown JSON value, or undefined when the value is not an object. */
export function field(value: unknown, key: string): unknown {
  if (typeof value !== 'object' || value === null) return undefined;
  return (value as Record<string, unknown>)[key];
}

/** A JSON value if it is a string. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
