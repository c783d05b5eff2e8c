import { describe, expect, it } from 'vitest';
import { RULES } from '../../src/policy/secret-rules.js';
import { scanText } from '../../src/policy/secret-scan.js';
import { CORPUS_FILES, committedText, MANIFEST, realText } from '../helpers/secret-corpus.js';

// Each file is scanned once; every labelled line is then checked against its findings.
const findings = new Map(CORPUS_FILES.map((file) => [file, scanText(file, realText(file))]));
const rulesOn = (file: string, line: number) =>
  (findings.get(file) ?? []).filter((f) => f.line === line).map((f) => f.rule);

describe('the labelled corpus', () => {
  const positives = MANIFEST.cases.filter((c) => c.rule !== null);
  const nearMisses = MANIFEST.cases.filter((c) => c.rule === null);

  it('is as large as the issue asks: at least 60 true positives and 30 near-misses', () => {
    expect(positives.length).toBeGreaterThanOrEqual(60);
    expect(nearMisses.length).toBeGreaterThanOrEqual(30);
  });

  for (const c of positives) {
    it(`${c.file}:${c.line} is reported as ${c.rule}`, () => {
      expect(rulesOn(c.file, c.line)).toContain(c.rule);
    });
  }

  for (const c of nearMisses) {
    it(`${c.file}:${c.line} (${c.category}) is not reported`, () => {
      expect(rulesOn(c.file, c.line)).toEqual([]);
    });
  }

  it('reports nothing on a line that is not labelled', () => {
    const labelled = new Set(MANIFEST.cases.map((c) => `${c.file}:${c.line}`));
    const extra = [...findings.values()]
      .flat()
      .filter((f) => !labelled.has(`${f.file}:${f.line}`))
      .map((f) => `${f.file}:${f.line} ${f.rule}`);
    expect(extra).toEqual([]);
  });

  it('covers every rule with a true positive and a benchmark category', () => {
    const ids = new Set(RULES.map((r) => r.id));
    const categorised = new Set(Object.values(MANIFEST.categories).flat());
    const fired = new Set(positives.map((c) => c.rule));
    for (const id of ids) {
      expect(categorised, id).toContain(id);
      expect(fired, id).toContain(id);
    }
  });

  it('as committed (defanged) holds nothing any rule reports, under its real name or its .txt one', () => {
    const flagged = CORPUS_FILES.flatMap((file) => [
      ...scanText(file, committedText(file)),
      ...scanText(`${file}.txt`, committedText(file)),
    ]).map((f) => `${f.file}:${f.line} ${f.rule}`);
    expect(flagged).toEqual([]);
  });
});
