/** Quoting one word for /bin/sh, shared by the reporter flags and the script resolver. */

/** Quote one word for /bin/sh (and for shlex, which pytest uses on PYTEST_ADDOPTS). */
export function shellQuote(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
