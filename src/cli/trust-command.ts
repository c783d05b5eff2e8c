/** `keel trust`, `keel trust diff`, `keel trust check`: review and accept what a project config may do. */
import { relative } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { ConfigError, projectConfigPath, type Raw, readTomlFile } from '../config/load.js';
import { keelPaths } from '../config/paths.js';
import { gatedKeys, permissionChanges, trustFile, trustState } from '../config/trust.js';
import { findRepo, gitTry } from '../policy/git.js';
import { reportError } from './errors.js';
import { EXIT } from './exit-codes.js';
import { inertLine } from './inert.js';
import { existingWorkspace, workspace } from './options.js';
import { dim, red } from './render.js';

function noProjectConfig(cwd: string, json?: boolean): number {
  return reportError(
    json,
    'CONFIG_ERROR',
    `no project config in ${cwd} (looked for keel.toml and .keel/config.toml)`,
  );
}

/** The project config file, or the exit code after saying why there is none (or two, or no such folder). */
function findProjectConfig(cwd: string | undefined, json?: boolean): string | number {
  try {
    const folder = existingWorkspace({ cwd });
    return projectConfigPath(folder) ?? noProjectConfig(folder, json);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return reportError(json, 'CONFIG_ERROR', err.message);
  }
}

/** Trust the workspace's project config as it is now. */
export async function runTrust(flags: { cwd?: string; json?: boolean }): Promise<number> {
  const file = findProjectConfig(flags.cwd, flags.json);
  if (typeof file === 'number') return file;
  const cwd = workspace(flags);
  const values = readTomlFile(file);
  const grants = gatedKeys(values, cwd);
  const hash = trustFile(file, keelPaths().trustFile);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ file, sha256: hash, grants })}\n`);
    return EXIT.ok;
  }
  process.stdout.write(`trusted ${file} (sha256 ${hash.slice(0, 12)})\n`);
  process.stdout.write(
    grants.length ? `it may now set: ${grants.join(', ')}\n` : dim('it sets no trust-gated keys\n'),
  );
  process.stdout.write(dim('if the file changes, these keys are ignored again until you trust it anew\n'));
  return EXIT.ok;
}

/** The file at a revision, through the hardened runner in the workspace's repository (none: undefined). */
function gitShow(cwd: string, rev: string, path: string): string | undefined {
  const repo = findRepo(cwd);
  if (!repo) return undefined;
  // `./` makes the path relative to cwd, which may be a subfolder of the repository
  return gitTry(cwd, ['show', '--end-of-options', `${rev}:./${path}`]);
}

/** Permission changes of the project config against a git revision; `check` exits 1 on any expansion. */
export async function runTrustDiff(
  flags: { cwd?: string; json?: boolean; base?: string },
  check: boolean,
): Promise<number> {
  const base = flags.base ?? 'HEAD';
  const file = findProjectConfig(flags.cwd, flags.json);
  if (typeof file === 'number') return file;
  const cwd = workspace(flags);
  const rel = relative(cwd, file);
  const before = gitShow(cwd, base, rel);
  let beforeValues: Raw;
  try {
    beforeValues = before === undefined ? {} : (parseToml(before) as Raw);
  } catch (err) {
    const why = (err as Error).message.split('\n')[0] ?? '';
    return reportError(flags.json, 'CONFIG_ERROR', `${rel} at ${base} is not valid TOML: ${why}`);
  }
  const changes = permissionChanges(beforeValues, readTomlFile(file), cwd);
  const expansions = changes.filter((c) => c.kind === 'expansion');
  const state = trustState(file, keelPaths().trustFile);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ file, base, trust: state, changes }, null, 2)}\n`);
  } else {
    if (!changes.length) process.stdout.write(`no permission changes in ${rel} since ${base}\n`);
    for (const c of changes)
      process.stdout.write(
        `${c.kind === 'expansion' ? red('+ expands') : '- narrows'}  ${inertLine(c.detail)}\n`,
      );
    if (before === undefined)
      process.stdout.write(dim(`(${rel} does not exist at ${base}; compared against no config)\n`));
  }
  if (check && expansions.length) {
    if (!flags.json)
      process.stderr.write(
        `${red('keel:')} ${expansions.length} permission expansion${expansions.length === 1 ? '' : 's'} in ${rel}\n`,
      );
    return EXIT.failed;
  }
  return EXIT.ok;
}
