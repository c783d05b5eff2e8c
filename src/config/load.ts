/** Layered config loading: defaults < user file < project file < KEEL_* env < flags, validated with zod. */
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import type { z } from 'zod';
import { defaultValues, mergeValues } from './narrowing.js';
import { keelPaths } from './paths.js';
import { type Config, configSchema } from './schema.js';
import { trustState, withoutGatedKeys } from './trust.js';

/** A config problem the user must fix; names the key, the file and what was expected. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Raw = Record<string, unknown>;

export interface Layer {
  /** Where the values came from: 'default', 'flag', 'env', or a file path. */
  source: string;
  kind: 'user' | 'project' | 'env' | 'flag';
  values: Raw;
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

/** Deep-merge `over` into `base` (arrays replace), recording each leaf's source. */
function mergeInto(base: Raw, over: Raw, source: string, sources: Record<string, string>, prefix = ''): void {
  for (const [key, value] of Object.entries(over)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const current = base[key];
    if (isPlainObject(value) && isPlainObject(current)) {
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

/** Validate merged values; on failure name the key, the layer that set it and what was expected. */
export function validate(merged: Raw, sources: Record<string, string>): Config {
  const result = configSchema.safeParse(merged);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      return issue.keys
        .map((k) => {
          const full = path ? `${path}.${k}` : k;
          return `${sourceOf(full, sources)}: unknown key "${full}"`;
        })
        .join('\n');
    }
    return `${sourceOf(path, sources)}: "${path}": ${describeIssue(issue)}`;
  });
  throw new ConfigError(`invalid config:\n  ${lines.join('\n  ')}`);
}

/** How `config show` names a layer. */
function layerSource(layer: Layer): string {
  return layer.kind === 'env' ? 'env' : layer.kind === 'flag' ? 'flag' : layer.source;
}

/** Load the effective config for a workspace. Throws ConfigError on any problem. */
export function loadConfig(opts: LoadOptions): LoadedConfig {
  const env = opts.env ?? process.env;
  const layers: Layer[] = [];
  const userFile = keelPaths(env).userConfig;
  const userValues = existsSync(userFile) ? readTomlFile(userFile) : undefined;
  if (userValues) layers.push({ source: userFile, kind: 'user', values: userValues });
  const projectFile = projectConfigPath(opts.cwd);
  const warnings: string[] = [];
  if (projectFile) {
    const raw = readTomlFile(projectFile);
    const state = trustState(projectFile, keelPaths(env).trustFile);
    // an untrusted project may narrow what the user's own config allows, never widen it
    const base = mergeValues(defaultValues(), userValues ?? {});
    const { values, dropped } =
      state === 'trusted' ? { values: raw, dropped: [] } : withoutGatedKeys(raw, opts.cwd, base);
    if (dropped.length) {
      const why = state === 'changed' ? 'changed since you trusted it' : 'is not trusted';
      warnings.push(
        `${projectFile} ${why}: ignoring ${dropped.join(', ')} (review it, then run \`keel trust\` to allow them)`,
      );
    }
    layers.push({ source: projectFile, kind: 'project', values });
  }
  layers.push({ source: 'env', kind: 'env', values: envLayer(env) });
  if (opts.flags) layers.push({ source: 'flag', kind: 'flag', values: stripUndefined(opts.flags) });
  return { ...resolveLayers(layers, projectFile), warnings };
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
