/**
 * Layered config loading: defaults < user file < project file < the profile in force < KEEL_* env
 * < flags, validated with zod.
 *
 * Profiles: any config file may hold `[profiles.NAME]` tables of ordinary config keys. At most one
 * is in force: `--profile` wins over KEEL_PROFILE, which wins over `profile = "NAME"` in the project
 * file, then in the user file. Its values go over the top level of every file and under env and
 * flags (as codex does): a profile is a named set of file settings, and env and flags still
 * override anything for one run. Where both files define it, the project's entries merge over the
 * user's, key by key. A name no file defines is a ConfigError that lists the ones defined. An
 * untrusted project's profile entries, and its choice of profile, pass the same narrow-only gate
 * as its top level (`gateUntrustedProject` in trust.ts).
 */
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import type { z } from 'zod';
import { closest } from './closest.js';
import { realRoot } from './narrowing.js';
import { keelPaths } from './paths.js';
import { APPROVALS, installedPlugins, type PluginServer, withPlugins } from './plugins.js';
import { configPrograms, type HashCache, type Program } from './programs.js';
import { allKeys, type Config, configSchema, keysAt, profileSchema } from './schema.js';
import { gateUntrustedProject, trustCheck } from './trust.js';

/** A config problem the user must fix; names the key, the file and what was expected. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Raw = Record<string, unknown>;

export interface Layer {
  /** Where the values came from: 'default', 'flag', 'env', a file path, or `profile NAME (path)`. */
  source: string;
  kind: 'user' | 'project' | 'env' | 'flag';
  /** Set when the values are the file's `[profiles.NAME]` entries. */
  profile?: string;
  values: Raw;
}

/** A config file taken apart: its top-level values, the profile it chooses and its profiles. */
export interface ConfigFile {
  path: string;
  /** The top level, without `profile` and `profiles`. */
  values: Raw;
  profile?: string;
  /** `[profiles.NAME]` tables by name, each checked against the schema. */
  profiles: Map<string, Raw>;
}

export interface LoadedConfig {
  config: Config;
  /** Dotted key -> source of the value in effect ('default' when no layer set it). */
  sources: Record<string, string>;
  layers: Layer[];
  /** The project config file, when there is one. */
  projectFile?: string;
  /** Things the user should know, such as project keys ignored until `keel trust`. */
  warnings: string[];
  /**
   * The files in the workspace that the config in force runs on the host (hooks, stdio MCP servers), hashed
   * as keel found them when it loaded the config: a session keeps them read-only and runs one only while
   * it is unchanged. From the user's own config too: its hooks are the user's, but the files are the model's
   * to write otherwise.
   */
  programs?: Program[];
  /** The MCP servers installed plugins added (src/config/plugins.ts): each runs only in the bwrap sandbox. */
  pluginServers?: PluginServer[];
}

export interface LoadOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Values from command-line flags, in config shape. */
  flags?: Raw;
}

const ENV_KEYS: Record<string, string> = {
  KEEL_PROVIDER: 'provider',
  KEEL_MODEL: 'model',
  KEEL_BASE_URL: 'base_url',
  KEEL_PERMISSION: 'permission',
  KEEL_TEST_COMMAND: 'test_command',
  KEEL_PROFILE: 'profile',
  KEEL_STORE: 'store',
};

/** Whether anything, even a dangling link, has this name: a file that is there but unreadable must not be skipped. */
function present(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
}

/** The project config file for a workspace: ./keel.toml or ./.keel/config.toml; both at once is a ConfigError. */
export function projectConfigPath(cwd: string): string | undefined {
  const found = [join(cwd, 'keel.toml'), join(cwd, '.keel', 'config.toml')].filter(present);
  // one would silently shadow the other (and the hooks the user trusted in it)
  if (found.length > 1)
    throw new ConfigError(
      `two project config files: ${found.join(' and ')}; keep one (keel reads either, never both)`,
    );
  return found[0];
}

/** Read and parse one TOML file into a raw layer, or throw a ConfigError that names it. */
export function readTomlFile(path: string): Raw {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  try {
    return parseToml(text) as Raw;
  } catch (err) {
    const e = err as Error & { line?: number; column?: number };
    const where = e.line ? ` (line ${e.line}, column ${e.column})` : '';
    throw new ConfigError(`invalid TOML in ${path}${where}: ${e.message.split('\n')[0]}`);
  }
}

/** Take a parsed config file apart; a malformed `profile` or `[profiles.NAME]` is a ConfigError naming the file and key. */
export function splitConfigFile(raw: Raw, path: string): ConfigFile {
  const { profile, profiles, ...values } = raw;
  return {
    path,
    values,
    profile: profileName(profile, `${path}: "profile"`),
    profiles: readProfiles(profiles, path),
  };
}

function profileName(value: unknown, where: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && value !== '') return value;
  throw new ConfigError(`${where}: expected the name of a profile, got ${JSON.stringify(value)}`);
}

function readProfiles(value: unknown, path: string): Map<string, Raw> {
  const profiles = new Map<string, Raw>();
  if (value === undefined) return profiles;
  if (!isPlainObject(value))
    throw new ConfigError(`${path}: "profiles": expected tables, written [profiles.NAME]`);
  for (const [name, body] of Object.entries(value)) {
    const key = `profiles.${name}`;
    if (!isPlainObject(body)) throw new ConfigError(`${path}: "${key}": expected a table of config keys`);
    if (Object.hasOwn(body, 'profile'))
      throw new ConfigError(`${path}: "${key}.profile": a profile cannot choose another profile`);
    const result = profileSchema.safeParse(body);
    if (!result.success)
      throw new ConfigError(
        `invalid config:\n  ${issueLines(result.error.issues, () => path, [key]).join('\n  ')}`,
      );
    profiles.set(name, body);
  }
  return profiles;
}

function envLayer(env: NodeJS.ProcessEnv): Raw {
  const values: Raw = {};
  for (const [name, key] of Object.entries(ENV_KEYS)) {
    const value = env[name];
    if (value !== undefined && value !== '') values[key] = value;
  }
  return values;
}

function isPlainObject(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

/** Lists every layer adds to: a "never" rule a layer below set stays, whatever a layer above lists. */
const ADDED_UP = new Set(['deny_commands']);

/** Deep-merge `over` into `base` (arrays replace, except ADDED_UP's, which join), recording each leaf's source. */
function mergeInto(base: Raw, over: Raw, source: string, sources: Record<string, string>, prefix = ''): void {
  for (const [key, value] of Object.entries(over)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const current = base[key];
    if (ADDED_UP.has(key) && Array.isArray(value) && Array.isArray(current)) {
      base[key] = [...new Set([...current, ...value])];
      sources[path] = source;
    } else if (isPlainObject(value) && isPlainObject(current)) {
      mergeInto(current, value, source, sources, path);
    } else if (isPlainObject(value)) {
      base[key] = {};
      mergeInto(base[key] as Raw, value, source, sources, path);
    } else {
      base[key] = value;
      sources[path] = source;
    }
  }
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return 'unknown key';
  if (issue.code === 'invalid_type') return `expected ${issue.expected}`;
  if (issue.code === 'invalid_value')
    return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  return issue.message;
}

function sourceOf(path: string, sources: Record<string, string>): string {
  if (sources[path]) return sources[path];
  // an error on an object (or array element) belongs to whoever set a key under it
  const prefix = `${path}.`;
  const hit = Object.entries(sources).find(([k]) => k.startsWith(prefix) || path.startsWith(`${k}.`));
  return hit ? hit[1] : 'defaults';
}

/** One line per issue: who set the key (`where`), the dotted key under `prefix`, and what was expected. */
function issueLines(
  issues: z.core.$ZodIssue[],
  where: (path: string) => string,
  prefix: string[] = [],
): string[] {
  return issues.map((issue) => {
    const path = [...prefix, ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys
        .map((k) => {
          const full = path ? `${path}.${k}` : k;
          const near = nearestKey(issue.path.map(String), k);
          return `${where(full)}: unknown key "${full}"${near ? ` (did you mean "${[...prefix, near].join('.')}"?)` : ''}`;
        })
        .join('\n');
    }
    const by = where(path);
    // a KEEL_* variable sets one key: its name says all, and is what the user typed
    if (by.startsWith('KEEL_')) return `${by}: ${describeIssue(issue)}`;
    return `${by}: "${path}": ${describeIssue(issue)}`;
  });
}

/** The known key an unknown one was probably meant to be: in the same table, else anywhere (`budgets.max_rounds`). */
function nearestKey(table: string[], key: string): string | undefined {
  const here = closest(key, keysAt(table));
  if (here) return [...table, here].join('.');
  const byLeaf = new Map(allKeys().map((full) => [full.split('.').at(-1) ?? full, full]));
  const leaf = byLeaf.has(key) ? key : closest(key, byLeaf.keys());
  return leaf === undefined ? undefined : byLeaf.get(leaf);
}

/** Validate merged values; on failure name the key, the layer that set it and what was expected. */
export function validate(merged: Raw, sources: Record<string, string>): Config {
  const result = configSchema.safeParse(merged);
  if (result.success) return result.data;
  const lines = issueLines(result.error.issues, (path) => {
    const source = sourceOf(path, sources);
    return source === 'env' ? (envVarFor(path) ?? source) : source;
  });
  throw new ConfigError(`invalid config:\n  ${lines.join('\n  ')}`);
}

/** The KEEL_* variable that sets a key. */
function envVarFor(path: string): string | undefined {
  const top = path.split('.')[0];
  return Object.entries(ENV_KEYS).find(([, key]) => key === top)?.[0];
}

/** How `config show` names a layer. */
function layerSource(layer: Layer): string {
  return layer.kind === 'env' ? 'env' : layer.kind === 'flag' ? 'flag' : layer.source;
}

/** Load the effective config for a workspace. Throws ConfigError on any problem. */
export function loadConfig(opts: LoadOptions): LoadedConfig {
  const env = opts.env ?? process.env;
  const { userConfig, trustFile, pluginsDir } = keelPaths(env);
  const warnings: string[] = [];
  const userFile = existsSync(userConfig) ? splitConfigFile(readTomlFile(userConfig), userConfig) : undefined;
  // what installed plugins add with the person's yes counts as the user's own config (src/config/plugins.ts)
  const pluginServers: PluginServer[] = [];
  const user = userWithPlugins(userFile, pluginsDir, warnings, pluginServers);
  const projectFile = projectConfigPath(opts.cwd);
  const project = projectFile ? splitConfigFile(readTomlFile(projectFile), projectFile) : undefined;
  if (project) refuseUnsandboxedServers(project, userConfig);
  if (project) refuseStore(project, userConfig);
  const envValues = envLayer(env);
  const flagValues = opts.flags ? stripUndefined(opts.flags) : undefined;
  // a profile the run names itself is the user's choice, over whatever either file chooses
  const named: Choice | undefined =
    choice(flagValues?.profile, '--profile') ?? choice(envValues.profile, 'KEEL_PROFILE');
  const files = { user, project, cwd: opts.cwd };
  const wanted = named ?? fileChoice(project) ?? fileChoice(user);
  if (wanted) ensureDefined(wanted, files, userConfig);
  let part: ProjectPart | undefined = project && {
    values: project.values,
    profile: project.profile,
    active: wanted?.name,
    profileValues: wanted && project.profiles.get(wanted.name),
  };
  // one reading of each program: the trust check and the session's pins must agree on it
  const root = realRoot(opts.cwd);
  const hashes: HashCache = new Map();
  const programs = (values: Raw) => configPrograms(values, root, env.PATH, hashes);
  const check =
    project &&
    trustCheck(project.path, trustFile, [project.values, ...project.profiles.values()].flatMap(programs));
  const state = check?.state;
  if (project && check && state !== 'trusted') {
    // an untrusted project may narrow what the user's own config allows, never widen it
    const gated = gateUntrustedProject(project, user, named?.name, opts.cwd);
    if (gated.dropped.length) {
      const changed = check.changed.map((p) => `${p.name} (run by ${p.by})`);
      const why = changed.length
        ? `${changed.join(', ')} changed since you trusted ${project.path}`
        : `${project.path} ${state === 'changed' ? 'changed since you trusted it' : 'is not trusted'}`;
      warnings.push(
        `${why}: ignoring ${gated.dropped.join(', ')} (review it, then run \`keel trust\` to allow them)`,
      );
    }
    const refused = gated.dropped.includes('profile');
    part = {
      values: gated.values,
      profile: refused ? undefined : project.profile,
      active: gated.profile,
      profileValues: gated.profileValues,
    };
    // the project's choice was refused, so the user file's is in force: it must exist
    const own = fileChoice(user);
    if (refused && own && own.name !== wanted?.name) ensureDefined(own, files, userConfig);
  }
  const active = part ? part.active : wanted?.name;
  const layers: Layer[] = [];
  if (user) layers.push({ source: user.path, kind: 'user', values: chosen(user.values, user.profile) });
  if (project && part)
    layers.push({ source: project.path, kind: 'project', values: chosen(part.values, part.profile) });
  if (active !== undefined) {
    const mine = user?.profiles.get(active);
    if (user && mine) layers.push(profileLayer(active, user.path, 'user', mine));
    const theirs = part?.profileValues;
    if (project && theirs && Object.keys(theirs).length)
      layers.push(profileLayer(active, project.path, 'project', theirs));
  }
  layers.push({ source: 'env', kind: 'env', values: envValues });
  if (flagValues) layers.push({ source: 'flag', kind: 'flag', values: flagValues });
  const resolved = resolveLayers(layers, projectFile);
  return { ...resolved, warnings, programs: programs(resolved.config as unknown as Raw), pluginServers };
}

/** The user's file (or none) with the approved plugins' servers, hooks and allowed commands added. */
function userWithPlugins(
  own: ConfigFile | undefined,
  pluginsDir: string,
  warnings: string[],
  added: PluginServer[],
): ConfigFile | undefined {
  const { plugins, warnings: found } = installedPlugins(pluginsDir);
  warnings.push(...found);
  // with no file of yours, the plugins' values are named by their approval record (`keel config show`)
  const base = own ?? { path: join(pluginsDir, APPROVALS), values: {}, profiles: new Map<string, Raw>() };
  const values = withPlugins(base.values, plugins, warnings, added);
  if (values === base.values) return own;
  return { ...base, values };
}

/**
 * `sandbox = "none"` on an MCP server runs a program as the user with nothing between it and their files:
 * only the user's own config may say so. A project file that does is refused whole, trusted or not, at
 * its top level or in a profile, so the answer never depends on trust or on which profile is in force.
 */
function refuseUnsandboxedServers(project: ConfigFile, userConfig: string): void {
  for (const [where, values] of [
    ['', project.values] as const,
    ...[...project.profiles].map(([name, body]) => [`[profiles.${name}] `, body] as const),
  ]) {
    const servers = Array.isArray(values.mcp_servers) ? values.mcp_servers : [];
    for (const server of servers) {
      if (!isPlainObject(server) || server.sandbox === undefined) continue;
      throw new ConfigError(
        `${project.path}: ${where}mcp server ${JSON.stringify(server.name ?? '')} sets sandbox = ${JSON.stringify(server.sandbox)}: a project config may not choose an MCP server's sandbox (only your own config, ${userConfig}, may run a server unsandboxed)`,
      );
    }
  }
}

/**
 * `store` says where runs and the ledger of every model call go (a PostgreSQL server, with its
 * credentials): a repository must not choose that for the user. A project file that sets it is refused
 * whole, trusted or not, at its top level or in a profile, as with an unsandboxed MCP server.
 */
function refuseStore(project: ConfigFile, userConfig: string): void {
  for (const [where, values] of [
    ['', project.values] as const,
    ...[...project.profiles].map(([name, body]) => [`[profiles.${name}] `, body] as const),
  ]) {
    if (Object.hasOwn(values, 'store'))
      throw new ConfigError(
        `${project.path}: ${where}sets "store": a project config may not choose where keel keeps runs and the ledger (set it in your own config, ${userConfig}, or KEEL_STORE)`,
      );
    // which hub project the page shows is the user's choice too: a repository may not point it at another
    if (Object.hasOwn(values, 'hub_project'))
      throw new ConfigError(
        `${project.path}: ${where}sets "hub_project": a project config may not choose which hub project keel serve shows (set it in your own config, ${userConfig})`,
      );
    // nor the key the hub's workflow runs are sealed and verified with
    if (Object.hasOwn(values, 'hub_audit_key_file'))
      throw new ConfigError(
        `${project.path}: ${where}sets "hub_audit_key_file": a project config may not choose the hub audit key (set it in your own config, ${userConfig}, or KEEL_HUB_AUDIT_KEY_FILE)`,
      );
  }
}

/** What of the project file applies: its top level, its `profile` key, the profile in force and its entries for it. */
interface ProjectPart {
  values: Raw;
  profile?: string;
  active?: string;
  profileValues?: Raw;
}

/** A choice of profile and who made it: `--profile`, `KEEL_PROFILE` or a file's path. */
interface Choice {
  name: string;
  from: string;
}

function choice(value: unknown, from: string): Choice | undefined {
  const name = profileName(value, from);
  return name === undefined ? undefined : { name, from };
}

function fileChoice(file: ConfigFile | undefined): Choice | undefined {
  return file?.profile === undefined ? undefined : { name: file.profile, from: file.path };
}

/** A file's values with its `profile` key, when it has one that stands. */
function chosen(values: Raw, profile: string | undefined): Raw {
  return profile === undefined ? values : { ...values, profile };
}

function profileLayer(name: string, file: string, kind: 'user' | 'project', values: Raw): Layer {
  return { source: `profile ${name} (${file})`, kind, profile: name, values };
}

/** Throw a ConfigError naming a profile no file defines, and the ones that are defined (with their files). */
function ensureDefined(
  wanted: Choice,
  files: { user?: ConfigFile; project?: ConfigFile; cwd: string },
  userConfig: string,
): void {
  const defined = new Map<string, string[]>();
  for (const file of [files.user, files.project])
    for (const name of file?.profiles.keys() ?? [])
      defined.set(name, [...(defined.get(name) ?? []), file?.path ?? '']);
  if (defined.has(wanted.name)) return;
  const list = [...defined.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, paths]) => `${name} (${paths.join(', ')})`);
  const where = files.project?.path ?? join(files.cwd, 'keel.toml');
  const known = list.length
    ? `defined profiles: ${list.join(', ')}`
    : `no profiles are defined; add a [profiles.${wanted.name}] table to ${userConfig} or ${where}`;
  throw new ConfigError(`profile "${wanted.name}" (chosen by ${wanted.from}) is not defined; ${known}`);
}

/** Merge and validate a list of layers (lowest first). */
export function resolveLayers(layers: Layer[], projectFile?: string): Omit<LoadedConfig, 'warnings'> {
  const merged: Raw = {};
  const sources: Record<string, string> = {};
  for (const layer of layers) mergeInto(merged, structuredClone(layer.values), layerSource(layer), sources);
  const config = validate(merged, sources);
  return { config, sources, layers, projectFile };
}

function stripUndefined(values: Raw): Raw {
  const out: Raw = {};
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined) continue;
    out[k] = isPlainObject(v) ? stripUndefined(v) : v;
  }
  return out;
}

/** The API key for a model: KEEL_API_KEY, else the variable the config names. Never logged. */
export function apiKeyFor(apiKeyEnv: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.KEEL_API_KEY || env[apiKeyEnv] || undefined;
}
