/**
 * Installed plugins (`keel plugin install`): folders under KEEL_HOME/plugins, each with a `keel-plugin.json`
 * naming skills, MCP servers, hooks, commands and shell permissions. What would widen what keel may do (a
 * server, a hook, an allowed command) takes effect only as the person approved it: the record in `approved.json`
 * holds the manifest's hash and each file of the plugin's folder (path, executable bit, content hash), so a hook's
 * program, a server's script or a skill changed, added or removed since the yes makes the plugin unapproved: it is
 * read without its widening parts and its skills until `keel plugin approve NAME`.
 * The config loader merges the approved parts into the user's own layer (they are the user's word).
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
} from 'node:fs';
import { isAbsolute, join } from 'node:path';
import * as z from 'zod';
import { hookSchema, mcpServerSchema } from './schema.js';

export const MANIFEST = 'keel-plugin.json';
export const APPROVALS = 'approved.json';
/** A manifest is a short list: anything bigger is refused before it is parsed. */
const MAX_MANIFEST = 64_000;
/** Stands for the plugin's installed folder in a server's or a hook's command. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: a placeholder the manifest writes, not a template
export const PLUGIN_DIR_VAR = '${KEEL_PLUGIN_DIR}';

export const PLUGIN_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;

const relPath = z
  .string()
  .min(1)
  .max(256)
  .refine(
    (p) => !isAbsolute(p) && !p.includes('\\') && !p.includes('\0') && !p.split('/').includes('..'),
    'must be a path inside the plugin (relative, no ..)',
  );

export const pluginManifestSchema = z
  .strictObject({
    name: z.string().regex(PLUGIN_NAME, 'must be lowercase letters, digits and -, at most 64'),
    version: z.string().max(64).optional(),
    description: z.string().max(1024).optional(),
    /** Folders inside the plugin, each holding a SKILL.md. */
    skills: z.array(relPath).max(64).default([]),
    mcp_servers: z.array(mcpServerSchema).max(16).default([]),
    hooks: z.array(hookSchema).max(16).default([]),
    /** Commands run without keel's approvals question (still in the sandbox), as `allow_commands` in config. */
    allow_commands: z.array(z.string().min(1).max(200)).max(32).default([]),
    /** Prompt templates inside the plugin, by name: `keel plugin run NAME COMMAND`, `/NAME:COMMAND` in chat. */
    commands: z
      .array(z.strictObject({ name: z.string().regex(PLUGIN_NAME), file: relPath }))
      .max(32)
      .default([]),
  })
  .superRefine((m, ctx) => {
    for (const s of m.mcp_servers)
      if (s.sandbox !== undefined)
        ctx.addIssue({
          code: 'custom',
          message: `mcp server "${s.name}": a plugin may not run a server outside the sandbox`,
        });
    const outside = (what: string, command: readonly string[] | undefined) => {
      const word = command?.find((w, i) => !coveredWord(w, i === 0));
      if (word !== undefined)
        ctx.addIssue({
          code: 'custom',
          message: `${what}: its command's ${JSON.stringify(word)} points outside the plugin's folder, which its approval does not cover (name a file of the plugin as ${PLUGIN_DIR_VAR}/PATH, a program by name, or a system program by its full path)`,
        });
    };
    for (const s of m.mcp_servers) outside(`mcp server "${s.name}"`, s.command);
    for (const h of m.hooks) outside(`hook ${h.event}`, h.command);
  });

/** Where the system's programs live: root's to change, so a plugin's command may run one by its full path. */
const SYSTEM_PROGRAMS = ['/bin/', '/sbin/', '/usr/bin/', '/usr/sbin/', '/usr/local/bin/'];

/**
 * Whether a word of a plugin's hook or server command stays within what the approval covers (the plugin's folder,
 * hashed) or the system. Every path in the word (absolute, from `~`, or with a `/`, also after `=` or `:`) must be
 * `${KEEL_PLUGIN_DIR}` or `${KEEL_PLUGIN_DIR}/PATH`, without `..`; a relative path would be the workspace's. The
 * program (the first word) is `${KEEL_PLUGIN_DIR}/PATH`, a bare name (found on PATH) or a program of the system by
 * its full path. The words are not a shell: what a program does by itself is what the person reads and approves.
 */
function coveredWord(word: string, program: boolean): boolean {
  if (/(^|[/=:,;\s'"])\.\.([/=:,;\s'"]|$)/.test(word)) return false;
  if (program) {
    if (word.startsWith(`${PLUGIN_DIR_VAR}/`)) return true;
    if (!word.includes('/')) return !word.startsWith('~') && !word.includes(PLUGIN_DIR_VAR);
    return SYSTEM_PROGRAMS.some((dir) => word.startsWith(dir));
  }
  const rest = word.replace(IN_PLUGIN, '$1');
  return !rest.includes(PLUGIN_DIR_VAR) && !rest.includes('/') && !/(^|[=:,;\s'"])~/.test(rest);
}

/** `${KEEL_PLUGIN_DIR}` opening a path of the plugin: at the word's start or after a separator. */
const IN_PLUGIN = new RegExp(
  `(^|[=:,;\\s'"])${PLUGIN_DIR_VAR.replace(/[${}]/g, '\\$&')}(?=$|[/=:,;\\s'"])[^=:,;\\s'"]*`,
  'g',
);

export type PluginManifest = z.infer<typeof pluginManifestSchema>;

/** sha256 of a manifest's bytes: what the person approved. */
export function manifestHash(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Read a manifest file (a regular file, never through a link, bounded) and check it strictly. */
export function readManifest(dir: string): { manifest: PluginManifest; sha256: string } | { error: string } {
  const file = join(dir, MANIFEST);
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { error: code === 'ENOENT' ? `no ${MANIFEST} in ${dir}` : `${file} cannot be opened (${code})` };
  }
  let bytes: Buffer;
  try {
    if (!fstatSync(fd).isFile()) return { error: `${file} is not a regular file` };
    const buf = Buffer.alloc(MAX_MANIFEST + 1);
    let got = 0;
    for (let n = 1; n > 0 && got < buf.length; got += n) n = readSync(fd, buf, got, buf.length - got, got);
    if (got > MAX_MANIFEST) return { error: `${file} is over ${MAX_MANIFEST} bytes` };
    bytes = buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    return { error: `${file} is not valid JSON: ${(err as Error).message}` };
  }
  const parsed = pluginManifestSchema.safeParse(raw);
  if (!parsed.success)
    return {
      error: `${file}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ')}`,
    };
  return { manifest: parsed.data, sha256: manifestHash(bytes) };
}

/** Everything a plugin would widen, one line each, for the person to approve (and `keel trust diff` to show). */
export function pluginWidening(m: PluginManifest): string[] {
  return [
    ...m.mcp_servers.map(
      (s) =>
        `mcp server ${s.name}: ${s.url !== undefined ? `url ${s.url}` : `runs ${JSON.stringify(s.command)}`}${s.offer === 'always' ? ' (offered from the first request)' : ''}`,
    ),
    ...m.hooks.map(
      (h) =>
        `hook ${h.event}${h.matcher !== undefined ? ` on ${JSON.stringify(h.matcher)}` : ''}: runs ${JSON.stringify(h.command)}${h.approver ? ' (an approver: may let commands run outside the sandbox)' : ''}`,
    ),
    ...m.allow_commands.map(
      (c) => `allow_commands: ${JSON.stringify(c)} runs without asking (in the sandbox)`,
    ),
  ];
}

/** Files and bytes of a plugin's folder the approval reads at most (what `keel plugin install` brings in at most). */
const MAX_FILES = 5_000;
const MAX_BYTES = 50_000_000;

/**
 * Each entry of a plugin's folder, by path relative to it in a stable (sorted) order: `dir` for a folder, else
 * `x` or `-` (the owner's executable bit) and the sha256 of the file's bytes. A link, a device or anything but a
 * regular file or a folder refuses the whole folder (keel plugin install brings none in), as do more files or
 * bytes than an install allows. What the person approves, and what a session checks before a plugin is in force.
 */
export function pluginFiles(dir: string): { files: Record<string, string> } | { error: string } {
  const files: Record<string, string> = {};
  let count = 0;
  let bytes = 0;
  const walk = (rel: string): string | undefined => {
    const names = readdirSync(rel ? join(dir, rel) : dir).sort();
    for (const name of names) {
      const path = rel ? `${rel}/${name}` : name;
      const full = join(dir, path);
      if (++count > MAX_FILES) return `more than ${MAX_FILES} files`;
      const info = lstatSync(full);
      if (info.isDirectory()) {
        files[path] = 'dir';
        const inner = walk(path);
        if (inner) return inner;
        continue;
      }
      if (!info.isFile()) return `${path} is ${info.isSymbolicLink() ? 'a link' : 'not a regular file'}`;
      let fd: number;
      try {
        fd = openSync(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      } catch (err) {
        return `${path} cannot be opened (${(err as NodeJS.ErrnoException).code})`;
      }
      try {
        const opened = fstatSync(fd);
        if (!opened.isFile()) return `${path} is not a regular file`;
        const hash = createHash('sha256');
        const buf = Buffer.alloc(64 * 1024);
        for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) {
          bytes += n;
          if (bytes > MAX_BYTES) return `more than ${MAX_BYTES} bytes`;
          hash.update(buf.subarray(0, n));
        }
        files[path] = `${opened.mode & 0o100 ? 'x' : '-'}${hash.digest('hex')}`;
      } finally {
        closeSync(fd);
      }
    }
    return undefined;
  };
  try {
    const error = walk('');
    return error ? { error } : { files };
  } catch (err) {
    return { error: `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
}

/** The paths that differ between two records of a plugin's folder, for a person: `hook.sh changed`, `x.sh added`. */
export function filesChanged(approved: Record<string, string>, now: Record<string, string>): string[] {
  const paths = [...new Set([...Object.keys(approved), ...Object.keys(now)])].sort();
  return paths.flatMap((p) => {
    if (approved[p] === now[p]) return [];
    if (approved[p] === undefined) return [`${p} added`];
    if (now[p] === undefined) return [`${p} removed`];
    return [`${p} changed`];
  });
}

/** What the person approved, by plugin name. */
export interface Approval {
  /** The manifest's hash. */
  sha256: string;
  source: string;
  /** The widening lines shown when the person said yes. */
  widens: string[];
  /** Every entry of the plugin's folder when the person said yes (pluginFiles); a record without it approves nothing. */
  files?: Record<string, string>;
}

export function readApprovals(pluginsDir: string): Record<string, Approval> {
  try {
    const raw = JSON.parse(readFileSync(join(pluginsDir, APPROVALS), 'utf8')) as unknown;
    return raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, Approval>) : {};
  } catch {
    return {};
  }
}

export interface InstalledPlugin {
  name: string;
  dir: string;
  manifest: PluginManifest;
  /** Its folder is the one the person approved: its servers, hooks, allowed commands and skills are in force. */
  approved: boolean;
  /** Why it is not approved, for a person (the manifest, or which files, changed since the yes). */
  unapproved?: string;
  widens: string[];
}

/** Whether the folder is the one approved, or why not. */
function approvalOf(dir: string, sha256: string, approval: Approval | undefined): string | undefined {
  if (!approval) return 'it was never approved';
  if (approval.sha256 !== sha256) return `its ${MANIFEST} is not the one you approved`;
  const now = pluginFiles(dir);
  if ('error' in now) return `its folder cannot be approved: ${now.error}`;
  if (!approval.files) return 'it was approved before keel checked the files of a plugin';
  const changed = filesChanged(approval.files, now.files);
  if (!changed.length) return undefined;
  const shown =
    changed.slice(0, 5).join(', ') + (changed.length > 5 ? `, and ${changed.length - 5} more` : '');
  return `its folder changed since you approved it (${shown})`;
}

/** The installed plugins that read back, and a warning for each folder that does not (or changed). */
export function installedPlugins(pluginsDir: string): { plugins: InstalledPlugin[]; warnings: string[] } {
  const plugins: InstalledPlugin[] = [];
  const warnings: string[] = [];
  let names: string[];
  try {
    names = readdirSync(pluginsDir).sort();
  } catch {
    return { plugins, warnings };
  }
  const approvals = readApprovals(pluginsDir);
  for (const name of names) {
    const dir = join(pluginsDir, name);
    if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() || name.startsWith('.')) continue;
    const read = readManifest(dir);
    if ('error' in read) {
      warnings.push(`plugin ${name} skipped: ${read.error}`);
      continue;
    }
    if (read.manifest.name !== name) {
      warnings.push(`plugin ${name} skipped: its ${MANIFEST} names it "${read.manifest.name}"`);
      continue;
    }
    const widens = pluginWidening(read.manifest);
    const unapproved = approvalOf(dir, read.sha256, approvals[name]);
    if (unapproved && (widens.length || read.manifest.skills.length))
      warnings.push(
        `plugin ${name}: ${unapproved}; ignoring its servers, hooks, allowed commands and skills (run \`keel plugin approve ${name}\` to review and approve it again)`,
      );
    plugins.push({
      name,
      dir,
      manifest: read.manifest,
      approved: !unapproved,
      ...(unapproved ? { unapproved } : {}),
      widens,
    });
  }
  return { plugins, warnings };
}

/** Why the installed plugin `name` is not what the person approved (its folder hashed again now), or undefined. */
export function pluginUnapproved(pluginsDir: string, name: string): string | undefined {
  const dir = join(pluginsDir, name);
  const read = readManifest(dir);
  if ('error' in read) return read.error;
  return approvalOf(dir, read.sha256, readApprovals(pluginsDir)[name]);
}

/**
 * For a command about to run: why a plugin whose folder it names (`${KEEL_PLUGIN_DIR}` became that folder when the
 * config loaded) is no longer the one approved, for a person; undefined when every such plugin still is.
 */
export function changedPluginOf(argv: readonly string[], pluginsDir: string): string | undefined {
  const roots = [...new Set([pluginsDir, canonical(pluginsDir)])].map((r) => `${r.replace(/\/+$/, '')}/`);
  const names = new Set<string>();
  for (const arg of argv)
    for (const root of roots)
      for (let at = arg.indexOf(root); at >= 0; at = arg.indexOf(root, at + 1)) {
        const name = arg.slice(at + root.length).split('/')[0] ?? '';
        if (PLUGIN_NAME.test(name)) names.add(name);
      }
  for (const name of names) {
    const why = pluginUnapproved(pluginsDir, name);
    if (why)
      return `plugin ${name}: ${why}; run \`keel plugin approve ${name}\` to review and approve it again`;
  }
  return undefined;
}

function withDir<T>(value: T, dir: string): T {
  return JSON.parse(JSON.stringify(value).split(PLUGIN_DIR_VAR).join(dir.replace(/["\\]/g, ''))) as T;
}

/** An MCP server a plugin added: it runs only in the bwrap sandbox, with the plugin's folder bound read-only. */
export interface PluginServer {
  plugin: string;
  /** The plugin's folder, canonical (what `${KEEL_PLUGIN_DIR}` became in the server's command). */
  dir: string;
  /** The server as the plugin added it to the config. */
  server: { name: string; command?: string[]; url?: string };
}

/** The plugin that added this server to the config, if one did (same name and the same command or URL). */
export function pluginOf(
  server: { name: string; command?: string[]; url?: string },
  added: readonly PluginServer[],
): PluginServer | undefined {
  return added.find(
    (p) =>
      p.server.name === server.name &&
      JSON.stringify(p.server.command ?? null) === JSON.stringify(server.command ?? null) &&
      (p.server.url ?? null) === (server.url ?? null),
  );
}

function canonical(dir: string): string {
  try {
    return realpathSync.native(dir);
  } catch {
    return dir;
  }
}

/**
 * The user's own values with each approved plugin's servers, hooks and allowed commands added (`${KEEL_PLUGIN_DIR}`
 * in a command stands for the plugin's folder). A server whose name is taken already is left out, with a warning.
 * Each server added is pushed onto `servers`, so a session can tell it from the user's own.
 */
export function withPlugins(
  values: Record<string, unknown>,
  plugins: readonly InstalledPlugin[],
  warnings: string[],
  added: PluginServer[] = [],
): Record<string, unknown> {
  const approved = plugins.filter((p) => p.approved && p.widens.length);
  if (!approved.length) return values;
  const list = (v: unknown) => (Array.isArray(v) ? [...v] : []);
  const servers = list(values.mcp_servers);
  const hooks = list(values.hooks);
  const allow = list(values.allow_commands);
  for (const p of approved) {
    const dir = canonical(p.dir);
    for (const server of p.manifest.mcp_servers) {
      if (servers.some((s) => (s as { name?: unknown })?.name === server.name)) {
        warnings.push(
          `plugin ${p.name}: mcp server "${server.name}" is configured already; the plugin's is not used`,
        );
        continue;
      }
      const resolved = withDir(server, dir);
      servers.push(resolved);
      added.push({ plugin: p.name, dir, server: resolved });
    }
    hooks.push(...p.manifest.hooks.map((h) => withDir(h, dir)));
    allow.push(...p.manifest.allow_commands);
  }
  return {
    ...values,
    ...(servers.length ? { mcp_servers: servers } : {}),
    ...(hooks.length ? { hooks } : {}),
    ...(allow.length ? { allow_commands: [...new Set(allow)] } : {}),
  };
}
