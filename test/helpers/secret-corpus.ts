/** The labelled secret corpus in test/fixtures/secrets/ (see its README), read back as the scanner should see it. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const CORPUS_DIR = fileURLToPath(new URL('../fixtures/secrets/corpus/', import.meta.url));

/** One labelled line: the rule that must report it, or null for a near-miss nothing may report. */
export interface CorpusCase {
  file: string;
  line: number;
  rule: string | null;
  category?: string;
}

interface Manifest {
  defang: string;
  categories: Record<string, string[]>;
  cases: CorpusCase[];
}

/** The manifest, parsed. */
export const MANIFEST = JSON.parse(
  readFileSync(fileURLToPath(new URL('../fixtures/secrets/manifest.json', import.meta.url)), 'utf8'),
) as Manifest;

/** The corpus files' paths as they are scanned (`app/.env`, not `app/.env.txt`). */
export const CORPUS_FILES = [...new Set(MANIFEST.cases.map((c) => c.file))];

/** A corpus file as committed: defanged, so no scanner flags it. */
export function committedText(file: string): string {
  return readFileSync(`${CORPUS_DIR}${file}.txt`, 'utf8');
}

/** A corpus file with its real (synthetic) secrets back in place. */
export function realText(file: string): string {
  return committedText(file).replaceAll(MANIFEST.defang, '');
}
