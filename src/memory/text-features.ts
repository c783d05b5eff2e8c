/**
 * Words and identifiers of a text, as search sees them. The full-text index splits `lookup_rate` into
 * `lookup` and `rate`; identifiers are also kept whole (joined: `lookuprate`, `srcrenderts`) and by their
 * base name (`render.ts` -> `renderts`), so a query that names one finds it exactly.
 */

// words too common to say anything about a note; kept out of queries and vectors, not out of the index
const STOPWORDS = new Set(
  'a an and are as at be but by did do does for from had has have how i in is it its of on or so that the their them then there these this to was we were what when where which who why will with you'.split(
    ' ',
  ),
);

/** Lowercase words (letters and digits) of a text, in order. */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Words that carry meaning: no stopwords. */
export function contentWords(text: string): string[] {
  return words(text).filter((w) => !STOPWORDS.has(w));
}

// a run of word characters joined by _ . / - or : (paths, snake_case, dotted names, SCREAMING_CASE)
const IDENT = /[\p{L}\p{N}_$]+(?:[./:-][\p{L}\p{N}_$]+)*/gu;

function joined(s: string): string {
  return s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');
}

/** camelCase and PascalCase parts: `lookupRate` -> lookup, rate; `HTTPServer` -> http, server. */
function camelParts(s: string): string[] {
  return s
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

/** Whether a token is an identifier rather than a word: has a separator inside, or mixed case. */
function isIdentifier(token: string): boolean {
  return (
    /[\p{L}\p{N}][_./:-]+[\p{L}\p{N}]/u.test(token) || /\p{Ll}\p{Lu}/u.test(token) || token.includes('_')
  );
}

/** The camelCase parts of a text's mixed-case identifiers, as plain words: `webhookSecret` -> webhook, secret. */
export function camelWords(text: string): string[] {
  return (text.match(IDENT) ?? []).filter((t) => /\p{Ll}\p{Lu}/u.test(t)).flatMap(camelParts);
}

/**
 * The identifier terms of a text: each identifier joined, its base name joined (for paths), and its
 * camelCase parts (the index's own tokenizer already splits on separators, not on case).
 */
export function identifierTerms(text: string): string[] {
  const out: string[] = [];
  for (const token of text.match(IDENT) ?? []) {
    if (!isIdentifier(token)) continue;
    const whole = joined(token);
    if (whole) out.push(whole);
    const base = token.split('/').pop() ?? token;
    const baseJoined = joined(base);
    if (base !== token && baseJoined && baseJoined !== whole) out.push(baseJoined);
    if (/\p{Ll}\p{Lu}/u.test(token)) out.push(...camelParts(token));
  }
  return out;
}

const VOWEL = /[aeiouy]/;

/**
 * A light English suffix stripper for the offline embedder, close to what FTS5's porter tokenizer does
 * for the common cases, so a word and its inflections share a feature: retried, retries and retrying
 * -> retri; rounded, rounding and rounds -> round; locked -> lock; caches and cache -> cach. Short words
 * and words without a vowel before the suffix are left alone.
 */
export function stem(word: string): string {
  let w = word;
  if (w.length <= 3 || /\d/.test(w)) return w;
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies') || w.endsWith('ied')) w = `${w.slice(0, -3)}i`;
  else if (w.endsWith('s') && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
  for (const suffix of ['ing', 'ed']) {
    const rest = w.slice(0, -suffix.length);
    if (w.endsWith(suffix) && rest.length >= 3 && VOWEL.test(rest)) {
      // undouble a final consonant: stopped -> stop (but not fall, pass, buzz)
      w = /([^aeiouylsz])\1$/.test(rest) ? rest.slice(0, -1) : rest;
      break;
    }
  }
  if (w.length > 4 && w.endsWith('e')) w = w.slice(0, -1);
  if (w.length > 3 && /[^aeiou]y$/.test(w)) w = `${w.slice(0, -1)}i`;
  return w;
}
