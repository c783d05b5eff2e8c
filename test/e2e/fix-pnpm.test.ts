/**
 * `keel fix` on a pnpm project whose package.json pins its manager (`packageManager`), on a machine where
 * pnpm is only corepack's shim and the sandbox has no network: keel follows `pnpm run` itself, so the pin
 * never matters; a command that does call pnpm ends at once with exit 3, naming the pinned manager and the
 * field, instead of waiting on corepack's network retries.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/tmp.js';
import { editTurns, type FixDoc, fixtureRepo, planTurns } from './fix-harness.js';
import { keel, keelHome, model, modelFlags } from './harness.js';

function hasCorepack(): boolean {
  try {
    execFileSync('corepack', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const TURNS = [
  ...planTurns('src/stats.js', '1. Divide by values.length.'),
  ...editTurns(
    'src/stats.js',
    'return sum(values) / (values.length + 1);',
    'return sum(values) / values.length;',
    'Fixed mean.',
  ),
];

describe.skipIf(!hasCorepack())('keel fix with a pinned pnpm and only corepack on the machine', () => {
  let shims: string;
  beforeAll(() => {
    // what `corepack enable` leaves: a pnpm on PATH that downloads the pinned version on first use
    shims = join(tempDir('keel-corepack-'), 'bin');
    mkdirSync(shims);
    execFileSync('corepack', ['enable', '--install-directory', shims, 'pnpm']);
  });

  async function fixWith(args: string[]) {
    const repo = fixtureRepo('pnpm-pinned');
    const server = await model(TURNS);
    const home = keelHome();
    const run = await keel(
      ['fix', '--repo', repo, '--json', ...modelFlags(server), '--issue', 'mean is off', ...args],
      {
        cwd: home,
        home,
        env: { PATH: `${shims}:${process.env.PATH ?? '/usr/bin:/bin'}` },
        timeoutMs: 25_000,
      },
    );
    return { run, doc: JSON.parse(run.stdout) as FixDoc };
  }

  it('`pnpm run` in the scripts is followed by keel, and the fix is verified without pnpm', async () => {
    const { run, doc } = await fixWith([]);

    expect(run.code, run.stderr).toBe(0);
    expect(doc).toMatchObject({ status: 'verified', files_changed: ['src/stats.js'] });
    expect(doc.verification?.targetsPassing).toEqual(['test/stats.test.js > mean of 2, 4, 6 is 4']);
  });

  it('a command that needs the pinned pnpm exits 3 at once, naming it and the packageManager field', async () => {
    const { run, doc } = await fixWith(['--test-command', 'pnpm -r run test:unit']);

    expect(run.code, run.stderr).toBe(3);
    expect(doc).toMatchObject({ code: 'ENVIRONMENT_ERROR', attempts: 0 });
    expect(doc.summary).toContain('pnpm@9.15.0');
    expect(doc.summary).toContain('"packageManager" field');
    // corepack's own retries take over a minute; told there is no network, it fails in well under one
    expect(run.ms).toBeLessThan(15_000);
  });
});
