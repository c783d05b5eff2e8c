/**
 * The folders `keel serve --project DIR` serves, checked before it listens: each is canonical (links
 * resolved), a folder, and a project as keel takes one (a repository's top, or a folder in no
 * repository): a folder inside a repository is refused naming the top, and the same project named
 * twice is refused. Without `--project`, the one project is the workspace `-C` or the current folder
 * is in, as before.
 */
import { realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../config/load.js';
import { existingWorkspace } from '../term/options.js';
import { findWorkspaceRoot } from '../term/workspace.js';

export function servedFolders(flags: { cwd?: string; project?: string[] }): string[] {
  const given = flags.project ?? [];
  if (given.length === 0) return [existingWorkspace(flags)];
  if (flags.cwd !== undefined)
    throw new ConfigError(
      '-C and --project: name every served project with --project (the first is the default), or one with -C',
    );
  const seen = new Map<string, string>();
  return given.map((dir) => {
    let real: string;
    try {
      real = realpathSync.native(resolve(dir));
    } catch {
      throw new ConfigError(`--project ${dir}: no such folder`);
    }
    if (!statSync(real).isDirectory()) throw new ConfigError(`--project ${dir}: ${real} is not a folder`);
    const root = findWorkspaceRoot(real);
    if (root !== real)
      throw new ConfigError(
        `--project ${dir}: ${real} is inside the repository ${root}; a project is a repository's top (name ${root})`,
      );
    const earlier = seen.get(real);
    if (earlier !== undefined)
      throw new ConfigError(`--project ${dir}: the same project as --project ${earlier} (${real})`);
    seen.set(real, dir);
    return real;
  });
}
