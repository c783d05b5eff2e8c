/**
 * `keel fix` on a cargo project, in the real sandbox: rustup's cargo (a toolchain outside /usr) runs there,
 * the correct fix is verified, and weakening the failing integration test is not. Skipped, saying why, on a
 * machine without cargo.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { editTurns, type FixRun, fix, fixtureRepo, planTurns } from './fix-harness.js';
import { model } from './harness.js';

function cargoVersion(): string | undefined {
  try {
    return execFileSync('cargo', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

const cargo = cargoVersion();
const TARGET = 'tests/stats.rs > mean_of_2_4_6_is_4';
const BUG = 'sum(values) / (values.len() as f64 + 1.0)';

async function attempt(path: string, from: string, to: string): Promise<FixRun> {
  const server = await model([
    ...planTurns('src/lib.rs', '1. Divide by the number of values.'),
    ...editTurns(path, from, to, 'Fixed mean.'),
  ]);
  return fix(fixtureRepo('cargo-stats'), server, ['--issue', 'mean is off', '--max-attempts', '1']);
}

describe.skipIf(cargo === undefined)(
  `keel fix with cargo test (${cargo ?? 'cargo is not installed here'})`,
  () => {
    it('the correct fix is verified, per test', async () => {
      const { run, doc } = await attempt('src/lib.rs', BUG, 'sum(values) / values.len() as f64');

      expect(run.code, run.stderr).toBe(0);
      expect(doc).toMatchObject({
        status: 'verified',
        files_changed: ['src/lib.rs'],
        test_command: 'cargo test',
      });
      expect(doc.verification).toMatchObject({ mode: 'per-test', targetsPassing: [TARGET], regressions: [] });
    });

    it('an integration test weakened to pass is not verified', async () => {
      const { run, doc } = await attempt(
        'tests/stats.rs',
        'assert_eq!(mean(&[2.0, 4.0, 6.0]), 4.0);',
        'assert!(mean(&[2.0, 4.0, 6.0]) > 0.0);',
      );

      expect(run.code, run.stderr).toBe(1);
      expect(doc).toMatchObject({ code: 'VERIFICATION_FAILED', status: 'failed' });
      expect(doc.verification?.targetsFailing).toEqual([TARGET]);
      expect(doc.verification?.testEdits).toEqual(['tests/stats.rs']);
    });
  },
);
