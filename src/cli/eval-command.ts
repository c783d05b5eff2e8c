/** `keel eval run` and `keel eval compare`: the honesty bar, measured by the product itself. */
import { writeFileSync } from 'node:fs';
import { EvalInputError, loadCases } from '../eval/cases.js';
import { compareReports, readReport } from '../eval/compare.js';
import type { EvalReport } from '../eval/run.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load } from '../term/options.js';
import { dim, red } from './render.js';

export interface EvalFlags extends CommonFlags {
  runs: number;
  maxAttempts: number;
  out?: string;
}

function bad(json: boolean | undefined, message: string): number {
  if (json)
    process.stdout.write(
      `${JSON.stringify({ code: 'CONFIG_ERROR', exit_code: EXIT.usage, error: message })}\n`,
    );
  else process.stderr.write(`${red('keel eval:')} ${inertLine(message)}\n`);
  return EXIT.usage;
}

export async function runEvalCommand(dir: string, flags: EvalFlags, version: string): Promise<number> {
  let cases: ReturnType<typeof loadCases>;
  try {
    cases = loadCases(dir);
    // the model flags are checked once, before any copy is made
    load({ ...flags, cwd: cases[0]?.repo });
  } catch (err) {
    if (err instanceof EvalInputError || err instanceof ConfigError) return bad(flags.json, err.message);
    throw err;
  }
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const { runEval } = await import('../eval/run.js');
  let report: EvalReport;
  try {
    report = await runEval({
      cases,
      runs: flags.runs,
      maxAttempts: flags.maxAttempts,
      version,
      load: (repo) => load({ ...flags, cwd: repo }).loaded,
      env: process.env,
      signal: controller.signal,
      progress: (m) => process.stderr.write(`${dim('keel eval:')} ${inertLine(m)}\n`),
    });
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  if (controller.signal.aborted) {
    process.stderr.write(`${red('keel eval:')} interrupted; no report\n`);
    return EXIT.interrupted;
  }
  if (flags.out) writeFileSync(flags.out, `${JSON.stringify(report, null, 2)}\n`);
  if (flags.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else printReport(report, flags.out);
  return report.self_check.ok ? EXIT.ok : EXIT.failed;
}

const pct = (x: number) => `${(x * 100).toFixed(0)}%`.padStart(5);

function printReport(r: EvalReport, out: string | undefined): void {
  const w = Math.max(7, ...r.cases.map((c) => c.name.length));
  const lines = [
    `keel eval: model ${inertLine(r.model)}, ${r.runs} run(s) per case, keel ${r.keel_version}`,
    `${'case'.padEnd(w)}  pass@1  pass@${r.runs}  verified  self-check`,
    ...r.cases.map(
      (c) =>
        `${inertLine(c.name).padEnd(w)}  ${pct(c.pass_at_1)}   ${pct(c.pass_at_n)}   ${`${c.successes}/${c.runs}`.padStart(8)}  ${c.self_check.ok ? 'ok' : 'FAILED'}`,
    ),
    `${'overall'.padEnd(w)}  ${pct(r.overall.pass_at_1)}   ${pct(r.overall.pass_at_n)}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (r.self_check.ok) {
    process.stdout.write(
      'self-check: ok (honest patches verified, cheating patches refused, verdicts repeated)\n',
    );
  } else {
    process.stdout.write(
      `\n${red('SELF-CHECK FAILED: this eval is not trustworthy')}\n${r.self_check.problems.map((p) => `  - ${inertLine(p)}`).join('\n')}\n`,
    );
  }
  if (out) process.stdout.write(dim(`report: ${inertLine(out)}\n`));
}

export function compareEvalCommand(a: string, b: string, flags: { json?: boolean }): number {
  let cmp: ReturnType<typeof compareReports>;
  try {
    cmp = compareReports(a, readReport(a), b, readReport(b));
  } catch (err) {
    if (err instanceof EvalInputError) return bad(flags.json, err.message);
    throw err;
  }
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(cmp, null, 2)}\n`);
    return EXIT.ok;
  }
  const label = (s: typeof cmp.a) =>
    `${inertLine(s.model)} (keel ${inertLine(s.keel_version)})${s.self_check_ok ? '' : ' SELF-CHECK FAILED'}`;
  const cell = (x: { pass_at_1: number; pass_at_n: number } | null) =>
    x ? `${pct(x.pass_at_1)} ${pct(x.pass_at_n)}` : '    —     —';
  const w = Math.max(7, ...cmp.cases.map((c) => c.case.length));
  const lines = [
    `A: ${inertLine(cmp.a.file)}: ${label(cmp.a)}`,
    `B: ${inertLine(cmp.b.file)}: ${label(cmp.b)}`,
    `${'case'.padEnd(w)}  A pass@1 pass@N  B pass@1 pass@N`,
    ...cmp.cases.map((c) => `${inertLine(c.case).padEnd(w)}    ${cell(c.a)}      ${cell(c.b)}`),
    `${'overall'.padEnd(w)}    ${cell(cmp.overall.a)}      ${cell(cmp.overall.b)}`,
    dim('nothing was applied: a comparison only reads the two reports'),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  return EXIT.ok;
}
