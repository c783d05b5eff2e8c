/** `keel check`: scan staged (or all tracked) files for secrets before they reach a commit. */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Finding, ScanError, scanRepo } from '../policy/secret-scan.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { reportError } from './errors.js';
import { red } from './render.js';

/** Scan and report; exit 1 when anything is found, 0 when clean, 2 outside a repository. */
export async function runCheck(flags: { allFiles?: boolean; json?: boolean; cwd?: string }): Promise<number> {
  const dir = resolve(flags.cwd ?? '.');
  const fail = (message: string, code: number) =>
    reportError(flags.json, code === EXIT.usage ? 'CONFIG_ERROR' : 'ENVIRONMENT_ERROR', message);
  if (!isDirectory(dir)) return fail(`no such folder: ${dir}`, EXIT.usage);

  let result: { filesScanned: number; findings: Finding[] };
  try {
    result = scanRepo(dir, { allFiles: Boolean(flags.allFiles) });
  } catch (err) {
    if (!(err instanceof ScanError)) throw err;
    if (err.code === 'NOT_A_REPO') {
      return fail(
        `${err.message}\n  keel check scans the files git tracks; run it inside a repository or pass -C DIR`,
        EXIT.usage,
      );
    }
    return fail(err.message, EXIT.environment);
  }

  const { filesScanned, findings } = result;
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ files_scanned: filesScanned, findings }, null, 2)}\n`);
    return findings.length ? EXIT.failed : EXIT.ok;
  }
  if (!findings.length) {
    process.stderr.write(`no secrets found in ${filesScanned} ${filesScanned === 1 ? 'file' : 'files'}\n`);
    return EXIT.ok;
  }
  // a file name is the repository's and a preview is its text: neither may reach the terminal raw
  for (const f of findings)
    process.stdout.write(
      `${inertLine(f.file)}:${f.line}:${f.column}  ${inertLine(f.rule)}  ${inertLine(f.preview)}\n`,
    );
  const noun = findings.length === 1 ? 'secret' : 'secrets';
  process.stderr.write(
    `${red('keel:')} ${findings.length} ${noun} found\n  not a secret? add "keel-allow: RULE" in a comment on that line\n`,
  );
  return EXIT.failed;
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
