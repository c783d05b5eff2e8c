/** What a fix leaves behind: rationale.md, pr.md, diff.patch, trace.jsonl, grounded in the diff and the tests. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoredEvent } from '../store/event-log.js';
import { counts } from '../verify/suite.js';
import type { SuiteRun } from '../verify/types.js';
import type { Verdict } from '../verify/verifier.js';

export interface ReportInput {
  runDir: string;
  issue: string;
  status: 'verified' | 'failed';
  plan: string;
  /** The model's own account of its last attempt: quoted as the model's, never as evidence. */
  modelSummary: string;
  patch: string;
  files: string[];
  baseline: SuiteRun;
  after?: SuiteRun;
  verdict?: Verdict;
  targets: string[];
  attempts: number;
  branch?: string;
  commit?: string;
  testCommand: string;
  events: StoredEvent[];
  /** Why the fix failed, when it did. */
  failure?: string;
}

export interface ReportPaths {
  rationale: string;
  pr: string;
  diff: string;
  trace: string;
}

/** Write the run's files and return where they are. */
export function writeReport(input: ReportInput): ReportPaths {
  mkdirSync(input.runDir, { recursive: true });
  const paths = {
    rationale: join(input.runDir, 'rationale.md'),
    pr: join(input.runDir, 'pr.md'),
    diff: join(input.runDir, 'diff.patch'),
    trace: join(input.runDir, 'trace.jsonl'),
  };
  writeFileSync(paths.diff, input.patch);
  writeFileSync(
    paths.trace,
    input.events.map((e) => JSON.stringify(e)).join('\n') + (input.events.length ? '\n' : ''),
  );
  writeFileSync(paths.rationale, rationale(input));
  writeFileSync(paths.pr, prDescription(input));
  return paths;
}

function title(issue: string): string {
  const first = issue.trim().split('\n')[0] ?? 'fix';
  return first.length > 72 ? `${first.slice(0, 69)}...` : first;
}

function quote(text: string): string {
  return text
    .trim()
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');
}

function list(items: string[], empty: string): string {
  return items.length ? items.map((i) => `- \`${i}\``).join('\n') : `- ${empty}`;
}

function diffStat(patch: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of patch.split('\n')) {
    if (line.startsWith('+') && !line.startsWith('+++')) added++;
    if (line.startsWith('-') && !line.startsWith('---')) removed++;
  }
  return { added, removed };
}

function evidence(input: ReportInput): string {
  const before = counts(input.baseline);
  const lines = [
    `Test command: \`${input.testCommand}\``,
    '',
    `- Before the change: ${before.passed} passed, ${before.failed} failed, ${before.skipped} skipped.`,
  ];
  if (input.after) {
    const after = counts(input.after);
    lines.push(
      `- After the change: ${after.passed} passed, ${after.failed} failed, ${after.skipped} skipped.`,
    );
  }
  const v = input.verdict;
  if (v) {
    lines.push('', 'Target tests now passing:', list(v.targetsPassing, 'none'));
    if (v.targetsFailing.length)
      lines.push('', 'Target tests still failing:', list(v.targetsFailing, 'none'));
    lines.push('', 'Regressions (passed before, fail now, confirmed on rerun):', list(v.regressions, 'none'));
    if (v.flaky.length) lines.push('', 'Flaky (failed, then passed on rerun):', list(v.flaky, 'none'));
    lines.push('', `Verifier: ${v.reason}`);
  }
  lines.push(...checkLines(input));
  lines.push(...testEditLines(v));
  return lines.join('\n');
}

/** The test command's other steps (lint, type check, audit): run apart from the tests, judged by exit code. */
function checkLines(input: ReportInput): string[] {
  const judged = input.verdict?.checks;
  if (judged !== undefined && judged.length > 0) {
    const lines = judged.map((c) => {
      const state =
        c.before === 'failed'
          ? `already failed before the change (${c.after} after; does not count)`
          : c.broken
            ? '**FAILED CHECK: passed before, fails after the change**'
            : `passed before, ${c.after} after`;
      return `- \`${c.name}\` (\`${c.command}\`): ${state}`;
    });
    return ['', "Checks (the test command's other steps, run apart from the tests):", ...lines];
  }
  const checks = input.baseline.checks ?? [];
  if (checks.length === 0) return [];
  const lines = checks.map(
    (c) => `- \`${c.name}\` (\`${c.command}\`): ${c.passed ? 'passed' : 'failed'} before the change`,
  );
  return ['', "Checks (the test command's other steps, run apart from the tests):", ...lines];
}

/** The model's edits to existing tests, said plainly: they either did not count, or were allowed to. */
function testEditLines(v: Verdict | undefined): string[] {
  const edits = v?.testEdits ?? [];
  if (!edits.length) return [];
  const how = v?.testEditsCounted
    ? 'COUNTED toward the verdict because of --allow-test-edits; review them as carefully as the fix:'
    : "set aside: the verdict used the repository's tests as they were before the change, so these edits do not count:";
  return ['', `Edits to existing tests and test configuration, ${how}`, list(edits, 'none')];
}

/** One line for the top of pr.md when the tests themselves were edited. */
function testEditHeadline(v: Verdict | undefined): string[] {
  const edits = v?.testEdits ?? [];
  if (!edits.length) return [];
  return [
    '',
    v?.testEditsCounted
      ? `**This change edits existing tests (${edits.length} file${edits.length === 1 ? '' : 's'}), and --allow-test-edits let those edits count toward the verdict.**`
      : `**This change edits existing tests (${edits.length} file${edits.length === 1 ? '' : 's'}); they were not counted: the verdict used the tests as they were before.**`,
  ];
}

function rationale(input: ReportInput): string {
  const { added, removed } = diffStat(input.patch);
  const verdict =
    input.status === 'verified'
      ? 'VERIFIED: the target tests pass and no test that passed before fails.'
      : `NOT VERIFIED: ${input.failure ?? input.verdict?.reason ?? 'the verifier did not accept the change'}`;
  return [
    `# Rationale: ${title(input.issue)}`,
    '',
    `**${verdict}** (${input.attempts} attempt${input.attempts === 1 ? '' : 's'})`,
    '',
    '## The issue',
    '',
    quote(input.issue),
    '',
    '## What was wrong',
    '',
    'Tests that failed before the change (the target):',
    list(input.targets, 'none'),
    '',
    ...input.targets
      .map((id) => input.baseline.results.find((r) => r.id === id))
      .filter((r) => r?.message)
      .map((r) => `\`${r?.id}\` failed with:\n\n\`\`\`\n${r?.message}\n\`\`\`\n`),
    "The model's plan:",
    '',
    quote(input.plan || '(no plan)'),
    '',
    '## What changed',
    '',
    `${input.files.length} file${input.files.length === 1 ? '' : 's'}, +${added} -${removed} lines:`,
    list(input.files, 'nothing'),
    '',
    '```diff',
    input.patch.trimEnd(),
    '```',
    '',
    '## Why',
    '',
    "The model's own explanation (not evidence; the tests below are):",
    '',
    quote(input.modelSummary || '(none)'),
    '',
    '## Which tests prove it',
    '',
    evidence(input),
    '',
  ].join('\n');
}

function prDescription(input: ReportInput): string {
  return [
    `# ${title(input.issue)}`,
    '',
    input.status === 'verified'
      ? "Fixed by keel and verified by the repository's own tests."
      : 'Attempted by keel; **not verified** - review before merging.',
    ...testEditHeadline(input.verdict),
    '',
    '## Issue',
    '',
    quote(input.issue),
    '',
    '## Changes',
    '',
    list(input.files, 'none'),
    '',
    '## Testing',
    '',
    evidence(input),
    '',
    input.branch
      ? `Branch: \`${input.branch}\`${input.commit ? `, commit \`${input.commit.slice(0, 12)}\`` : ''}`
      : '',
    '',
  ].join('\n');
}
