/** Turning command-line flags into a config layer, and loading the config the same way for every verb. */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError, type LoadedConfig, loadConfig, type Raw } from '../config/load.js';
import { workspace } from './workspace.js';

export interface CommonFlags {
  cwd?: string;
  json?: boolean;
  /** `--profile NAME`: the `[profiles.NAME]` to use, over KEEL_PROFILE and any file's `profile`. */
  profile?: string;
  provider?: string;
  model?: string;
  baseUrl?: string;
  script?: string;
  contextWindow?: number;
  maxRounds?: number;
  maxTokens?: number;
  maxCost?: number;
  maxWall?: number;
  maxDiffLines?: number;
  allowShell?: boolean;
}

/** The config layer the flags make (only the flags that were given). */
export function flagLayer(flags: CommonFlags): Raw {
  return {
    profile: flags.profile,
    provider: flags.provider,
    model: flags.model,
    base_url: flags.baseUrl,
    script: flags.script === undefined ? undefined : resolve(flags.script),
    context_window: flags.contextWindow,
    allow_shell: flags.allowShell,
    budgets: {
      max_rounds: flags.maxRounds,
      max_tokens: flags.maxTokens,
      max_cost_usd: flags.maxCost,
      max_wall_s: flags.maxWall,
      max_diff_lines: flags.maxDiffLines,
    },
  };
}

/** The workspace folder, or a ConfigError when it is not one (a typo in -C must not read as "no config here"). */
export function existingWorkspace(flags: { cwd?: string }): string {
  const cwd = workspace(flags);
  if (!statSync(cwd, { throwIfNoEntry: false })?.isDirectory())
    throw new ConfigError(`workspace ${cwd} is not a folder`);
  return cwd;
}

/** The workspace and its effective config; throws ConfigError when either is wrong. */
export function load(flags: CommonFlags): { cwd: string; loaded: LoadedConfig } {
  const cwd = existingWorkspace(flags);
  return { cwd, loaded: loadConfig({ cwd, flags: flagLayer(flags) }) };
}

export { ConfigError, workspace };
