/**
 * Finding skills: Agent Skills folders (a `SKILL.md` with YAML front matter, a Markdown body, and optional
 * `scripts/`, `references/`, `assets/`) in the project's `.keel/skills/` and `.agents/skills/`, the user's
 * KEEL_HOME/skills/, and installed plugins. Lenient as the format asks: a name that does not match its folder
 * is a warning, a skill without a description is skipped with one. A project's skills are used only once
 * `keel trust` recorded each SKILL.md as it is now; a repository writes them, so every file is read without
 * following a link, only inside the workspace, and bounded.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import { keelPaths } from '../config/paths.js';
import { installedPlugins } from '../config/plugins.js';
import { trustedHash } from '../config/trust.js';
import type { parseSkillFile } from './front-matter.js';
import { MAX_DESCRIPTION, oneLine, validName } from './text.js';

export type SkillSource = 'project' | 'user' | 'plugin';

/** Bytes of a SKILL.md read at most; a longer body is cut, with a note. */
export const MAX_SKILL_BYTES = 64_000;
/** Skills in the catalog at most (it is in every request); the rest are ignored with a warning. */
export const MAX_SKILLS = 50;
/** Folders looked at in one skills folder at most. */
const MAX_ENTRIES = 200;
/** Entries of `allowed-tools` kept at most. */
const MAX_ALLOWED = 32;

export const PROJECT_DIRS = [join('.keel', 'skills'), join('.agents', 'skills')];

export interface Skill {
  name: string;
  description: string;
  source: SkillSource;
  /** The plugin it came with (source plugin). */
  plugin?: string;
  /** Its folder and its SKILL.md, absolute. */
  dir: string;
  file: string;
  body: string;
  /** `allowed-tools` as written (entries), when it has one: on activation the session narrows to them. */
  allowedTools?: string[];
  /** sha256 of the SKILL.md bytes read: what `keel trust` records for a project skill. */
  sha256: string;
  /** A user's or a plugin's skill always; a project's once `keel trust` recorded it as it is. */
  trusted: boolean;
  /** In the catalog: trusted, not shadowed by an earlier skill of the same name, within the cap. */
  used: boolean;
  warnings: string[];
}

/** A folder that held no usable SKILL.md: where, and why. */
export interface Skipped {
  source: SkillSource;
  plugin?: string;
  dir: string;
  reason: string;
}

export interface SkillSet {
  /** Every skill found, used or not, in the catalog's order. */
  all: Skill[];
  skipped: Skipped[];
  warnings: string[];
}

export interface LoadSkillsOptions {
  /** The workspace (canonical or not). */
  root: string;
  env?: NodeJS.ProcessEnv;
}

/** The skills a session in `root` can see, with what the person should know about the others. */
export async function loadSkills(opts: LoadSkillsOptions): Promise<SkillSet> {
  const env = opts.env ?? process.env;
  const paths = keelPaths(env);
  const root = realpathSync(opts.root);
  const all: Skill[] = [];
  const skipped: Skipped[] = [];
  const warnings: string[] = [];
  const take = (found: Found) => {
    all.push(...found.skills);
    skipped.push(...found.skipped);
  };
  const folders = PROJECT_DIRS.map((dir) => projectFolder(root, dir, warnings));
  const plugins = installedPlugins(paths.pluginsDir).plugins.filter((p) => p.manifest.skills.length);
  const user = statSync(paths.skillsDir, { throwIfNoEntry: false })?.isDirectory();
  // the YAML parser is loaded only where there may be a skill: a session without any never pays for it
  if (!folders.some(Boolean) && !user && !plugins.length) return { all, skipped, warnings };
  const { parseSkillFile: parse } = await import('./front-matter.js');
  for (const folder of folders)
    if (folder) take(scanFolder(folder, { source: 'project', root, trustFile: paths.trustFile, parse }));
  if (user) take(scanFolder(paths.skillsDir, { source: 'user', links: true, parse }));
  for (const plugin of plugins)
    for (const rel of plugin.manifest.skills) {
      const dir = join(plugin.dir, rel);
      if (!plugin.approved) {
        const reason = `plugin ${plugin.name} is not approved: ${plugin.unapproved} (keel plugin approve ${plugin.name})`;
        skipped.push({ source: 'plugin', plugin: plugin.name, dir, reason });
        continue;
      }
      const one = readSkill(dir, rel.split('/').at(-1) ?? rel, {
        source: 'plugin',
        plugin: plugin.name,
        root: realOr(plugin.dir),
        parse,
      });
      if ('reason' in one) skipped.push(one);
      else all.push(one);
    }
  const taken = new Map<string, Skill>();
  for (const skill of all) {
    if (!skill.trusted) continue;
    const first = taken.get(skill.name);
    if (first) {
      skill.warnings.push(`shadowed by the ${first.source} skill of the same name (${first.dir})`);
      continue;
    }
    if (taken.size >= MAX_SKILLS) {
      skill.warnings.push(`not in the catalog: at most ${MAX_SKILLS} skills are`);
      continue;
    }
    taken.set(skill.name, skill);
    skill.used = true;
  }
  const untrusted = all.filter((s) => s.source === 'project' && !s.trusted);
  if (untrusted.length)
    warnings.push(
      `ignoring ${untrusted.length} project skill${untrusted.length === 1 ? '' : 's'} (${untrusted.map((s) => s.name).join(', ')}) until you review ${untrusted.length === 1 ? 'it' : 'them'} and run \`keel trust\``,
    );
  return { all, skipped, warnings };
}

/** The skills in the catalog. */
export function usedSkills(set: SkillSet): Skill[] {
  return set.all.filter((s) => s.used);
}

/** A project skills folder that exists and leads nowhere outside the workspace; a warning when it would. */
function projectFolder(root: string, rel: string, warnings: string[]): string | undefined {
  const path = join(root, rel);
  if (!lstatSync(path, { throwIfNoEntry: false })) return undefined;
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    warnings.push(`${rel} cannot be resolved; its skills are ignored`);
    return undefined;
  }
  if (!inside(root, real)) {
    warnings.push(`${rel} leads outside the workspace; its skills are ignored`);
    return undefined;
  }
  return real;
}

interface ScanOptions {
  source: SkillSource;
  /** Files must stay inside this folder (a project's workspace). */
  root?: string;
  /** Skill folders may be links (the user's own folder: linking skills in is common). */
  links?: boolean;
  /** Where `keel trust` records project skills. */
  trustFile?: string;
  plugin?: string;
  /** The front matter parser (src/skills/front-matter.ts, loaded when there is a skill to read). */
  parse: typeof parseSkillFile;
}

interface Found {
  skills: Skill[];
  skipped: Skipped[];
}

function scanFolder(folder: string, opts: ScanOptions): Found {
  const found: Found = { skills: [], skipped: [] };
  let names: string[];
  try {
    names = readdirSync(folder).sort().slice(0, MAX_ENTRIES);
  } catch {
    return found;
  }
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const dir = join(folder, name);
    const info = lstatSync(dir, { throwIfNoEntry: false });
    const isDir =
      info?.isDirectory() ||
      (opts.links && info?.isSymbolicLink() && statSync(dir, { throwIfNoEntry: false })?.isDirectory());
    if (!isDir) continue;
    const read = readSkill(dir, name, opts);
    if ('reason' in read) found.skipped.push(read);
    else found.skills.push(read);
  }
  return found;
}

/** One skill folder: the skill, or why it is skipped. */
function readSkill(dir: string, folderName: string, opts: ScanOptions): Skill | Skipped {
  const where = { source: opts.source, ...(opts.plugin ? { plugin: opts.plugin } : {}), dir };
  const file = join(dir, 'SKILL.md');
  const read = readBounded(file, opts);
  if ('skip' in read) return { ...where, reason: read.skip };
  const sha256 = createHash('sha256').update(read.bytes).digest('hex');
  const warnings: string[] = [];
  const text = new TextDecoder('utf-8').decode(read.bytes);
  const parsed = opts.parse(text);
  if (!parsed.ok) return { ...where, reason: `SKILL.md: ${parsed.error}` };
  const { data } = parsed;
  let name = typeof data.name === 'string' ? data.name.trim() : '';
  if (!validName(name)) {
    const shown = oneLine(String(data.name ?? ''), 40);
    if (!validName(folderName))
      return { ...where, reason: `no valid name (lowercase letters, digits and single hyphens): "${shown}"` };
    warnings.push(`its name "${shown}" is not a valid skill name; the folder's name is used`);
    name = folderName;
  } else if (name !== folderName)
    warnings.push(`its name "${name}" does not match its folder "${folderName}"`);
  const description = typeof data.description === 'string' ? oneLine(data.description, MAX_DESCRIPTION) : '';
  if (!description) return { ...where, reason: `skill ${name} has no description` };
  if (read.cut) warnings.push(`SKILL.md is over ${MAX_SKILL_BYTES} bytes; its body is cut there`);
  const allowed = allowedTools(data['allowed-tools'], warnings);
  const trusted =
    opts.source !== 'project' ||
    (opts.trustFile !== undefined && trustedHash(read.real, opts.trustFile) === sha256);
  return {
    name,
    description,
    source: opts.source,
    ...(opts.plugin ? { plugin: opts.plugin } : {}),
    dir,
    file: read.real,
    body: parsed.body.trim() + (read.cut ? `\n[... SKILL.md cut at ${MAX_SKILL_BYTES} bytes]` : ''),
    ...(allowed ? { allowedTools: allowed } : {}),
    sha256,
    trusted,
    used: false,
    warnings,
  };
}

/** `allowed-tools`: a space- or comma-separated string, or a list of strings. */
function allowedTools(value: unknown, warnings: string[]): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const entries =
    typeof value === 'string'
      ? (value.match(/[^\s,()]+(?:\([^)]*\))?/g) ?? [])
      : Array.isArray(value)
        ? value.filter((v): v is string => typeof v === 'string')
        : undefined;
  if (entries === undefined) {
    warnings.push('allowed-tools is neither a string nor a list; the skill allows no tool once activated');
    return [];
  }
  return entries
    .map((e) => oneLine(e, 120))
    .filter(Boolean)
    .slice(0, MAX_ALLOWED);
}

type Bounded = { bytes: Buffer; cut: boolean; real: string } | { skip: string };

/** A SKILL.md: a regular file, opened without following a link, inside `root` when given, at most MAX_SKILL_BYTES. */
function readBounded(file: string, opts: ScanOptions): Bounded {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { skip: 'no SKILL.md' };
    if (code === 'ELOOP') return { skip: 'SKILL.md is a symlink' };
    return { skip: `SKILL.md cannot be opened (${code})` };
  }
  try {
    if (!fstatSync(fd).isFile()) return { skip: 'SKILL.md is not a regular file' };
    const real = openedPath(fd) ?? realpathSync(file);
    if (opts.root && !inside(opts.root, real)) return { skip: 'SKILL.md leads outside its folder' };
    const buf = Buffer.alloc(MAX_SKILL_BYTES + 1);
    let got = 0;
    for (let n = 1; n > 0 && got < buf.length; got += n) n = readSync(fd, buf, got, buf.length - got, got);
    return { bytes: buf.subarray(0, Math.min(got, MAX_SKILL_BYTES)), cut: got > MAX_SKILL_BYTES, real };
  } finally {
    closeSync(fd);
  }
}

function openedPath(fd: number): string | null {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

function realOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
