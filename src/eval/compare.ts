/** `keel eval compare`: two eval reports side by side, per case. Only reads; nothing is ever applied. */
import { readFileSync } from 'node:fs';
import { EvalInputError } from './cases.js';
import type { EvalReport } from './run.js';

export interface CompareRow {
  case: string;
  a: { pass_at_1: number; pass_at_n: number; runs: number } | null;
  b: { pass_at_1: number; pass_at_n: number; runs: number } | null;
}

export interface Comparison {
  a: { file: string; model: string; keel_version: string; self_check_ok: boolean };
  b: { file: string; model: string; keel_version: string; self_check_ok: boolean };
  cases: CompareRow[];
  overall: { a: EvalReport['overall']; b: EvalReport['overall'] };
}

/** A report written by `keel eval run --out` (or its --json), checked for the fields compare reads. */
export function readReport(file: string): EvalReport {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new EvalInputError(`${file}: not a readable JSON report (${(err as Error).message})`);
  }
  const r = doc as Partial<EvalReport>;
  if (r?.keel_eval !== 1 || !Array.isArray(r.cases) || typeof r.overall !== 'object' || !r.self_check)
    throw new EvalInputError(`${file}: not a keel eval report (write one with keel eval run --out FILE)`);
  return r as EvalReport;
}

export function compareReports(fileA: string, a: EvalReport, fileB: string, b: EvalReport): Comparison {
  const names = [...new Set([...a.cases.map((c) => c.name), ...b.cases.map((c) => c.name)])].sort();
  const side = (r: EvalReport, name: string) => {
    const c = r.cases.find((x) => x.name === name);
    return c ? { pass_at_1: c.pass_at_1, pass_at_n: c.pass_at_n, runs: c.runs } : null;
  };
  const head = (file: string, r: EvalReport) => ({
    file,
    model: r.model,
    keel_version: r.keel_version,
    self_check_ok: r.self_check.ok,
  });
  return {
    a: head(fileA, a),
    b: head(fileB, b),
    cases: names.map((name) => ({ case: name, a: side(a, name), b: side(b, name) })),
    overall: { a: a.overall, b: b.overall },
  };
}
