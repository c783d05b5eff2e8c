/** `keel config show`: the effective config, where each value came from, secrets masked. */
import { keelPaths } from '../config/paths.js';
import { configSchema } from '../config/schema.js';
import { redact } from '../store/redact.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { ConfigError, load } from '../term/options.js';
import { reportError } from './errors.js';
import { dim } from './render.js';

type Flat = Array<{ key: string; value: unknown; source: string }>;

function flatten(value: unknown, sources: Record<string, string>, prefix = '', out: Flat = []): Flat {
  if (
    value &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    Object.keys(value).length > 0 &&
    prefix !== 'pricing'
  ) {
    for (const [k, v] of Object.entries(value)) flatten(v, sources, prefix ? `${prefix}.${k}` : k, out);
    return out;
  }
  const source =
    sources[prefix] ?? Object.entries(sources).find(([k]) => k.startsWith(`${prefix}.`))?.[1] ?? 'default';
  out.push({ key: prefix, value, source });
  return out;
}

/** Print the effective config; exit 2 with the problem when it does not load. */
export async function showConfig(flags: { cwd?: string; json?: boolean; profile?: string }): Promise<number> {
  let setup: ReturnType<typeof load>;
  try {
    setup = load(flags);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return reportError(flags.json, 'CONFIG_ERROR', err.message);
  }
  const { sources, projectFile } = setup.loaded;
  // a store URL may hold a password: shown masked, as keel's store errors show it
  const config = setup.loaded.config.store
    ? { ...setup.loaded.config, store: redact(setup.loaded.config.store) }
    : setup.loaded.config;
  const keyVar = process.env.KEEL_API_KEY ? 'KEEL_API_KEY' : config.api_key_env;
  const keySet = Boolean(process.env[keyVar]);
  const apiKey = { env: keyVar, set: keySet, value: keySet ? '********' : null };
  const files = { user: keelPaths().userConfig, project: projectFile ?? null };
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ config, sources, api_key: apiKey, files }, null, 2)}\n`);
    return EXIT.ok;
  }
  const rows = flatten(configSchema.parse(config), sources);
  const width = Math.max(...rows.map((r) => r.key.length));
  for (const row of rows) {
    // JSON escapes C0 controls but not C1 or bidi characters, and a project file chose these values
    const shown = row.value === undefined ? dim('(unset)') : inertLine(JSON.stringify(row.value));
    process.stdout.write(
      `${inertLine(row.key).padEnd(width)} = ${shown}  ${dim(`# ${inertLine(row.source)}`)}\n`,
    );
  }
  process.stdout.write(
    `${'api key'.padEnd(width)} = ${keySet ? '********' : dim('(not set)')}  ${dim(`# env ${inertLine(keyVar)}`)}\n`,
  );
  process.stdout.write(
    dim(`\nuser config: ${inertLine(files.user)}\nproject config: ${inertLine(files.project ?? '(none)')}\n`),
  );
  return EXIT.ok;
}
