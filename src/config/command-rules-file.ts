/**
 * Adding a persistent command rule (`allow_commands`, `deny_commands`) to a config file: the user's own,
 * or a project's `keel.toml` (where an allow rule waits for `keel trust`). The file is edited in place,
 * its comments and other keys kept; the result is parsed back before it is written, so a rule is never
 * half-saved and a file keel cannot edit safely is named instead of rewritten.
 */
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { parse } from 'smol-toml';
import { ConfigError } from './load.js';

export type RuleKey = 'allow_commands' | 'deny_commands';

/**
 * Add `rule` to `key` in `file` (created when missing); false when the rule is there already. With `within`
 * (a project's root), the file is edited only where it stands: not through a symlink, not in a folder that
 * leads outside the project (a hostile repository's keel.toml linked to the user's own config would put a
 * rule in force that should wait for `keel trust`).
 */
export function addCommandRule(file: string, key: RuleKey, rule: string, within?: string): boolean {
  if (within) standsInside(file, within);
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const before = parseOrThrow(text, file);
  const current = before[key];
  if (current !== undefined && !(Array.isArray(current) && current.every((r) => typeof r === 'string')))
    throw new ConfigError(`${file}: ${key} is not a list of commands; fix it by hand`);
  const list = (current ?? []) as string[];
  if (list.includes(rule)) return false;
  const next = [...list, rule];
  const line = `${key} = ${JSON.stringify(next)}`;
  let out: string;
  if (current === undefined) {
    // a top-level key goes before any [table]: the file's first line is always top level
    out = `${line}\n${text}`;
  } else {
    const found = new RegExp(`^${key}[ \\t]*=.*$`, 'm').exec(text);
    out = found ? text.slice(0, found.index) + line + text.slice(found.index + found[0].length) : text;
  }
  let after: Record<string, unknown> | undefined;
  try {
    after = parse(out) as Record<string, unknown>;
  } catch {
    // the edit broke the file: it is not written
  }
  if (JSON.stringify(after?.[key]) !== JSON.stringify(next))
    throw new ConfigError(
      `${file}: ${key} spans lines or sits in a table; add ${JSON.stringify(rule)} to it by hand`,
    );
  mkdirSync(dirname(file), { recursive: true });
  // a new file beside it, renamed over it: a symlink put at the name meanwhile is replaced, not followed
  const temp = join(dirname(file), `.${basename(file)}.keel-${randomBytes(4).toString('hex')}.tmp`);
  writeFileSync(temp, out, { flag: 'wx' });
  renameSync(temp, file);
  return true;
}

function standsInside(file: string, root: string): void {
  const refuse = (why: string) => {
    throw new ConfigError(`${file} ${why}: keel edits a project's config only where it stands`);
  };
  if (lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink()) refuse('is a symlink');
  let folder = dirname(file);
  while (!existsSync(folder)) folder = dirname(folder);
  const rel = relative(realpathSync(root), realpathSync(folder));
  if (rel === '..' || rel.startsWith(`..${sep}`) || rel.startsWith(sep))
    refuse('is in a folder outside the project');
}

function parseOrThrow(text: string, file: string): Record<string, unknown> {
  try {
    return parse(text) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`invalid TOML in ${file}: ${(err as Error).message.split('\n')[0]}`);
  }
}
