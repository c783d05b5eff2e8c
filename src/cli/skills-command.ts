/** `keel skills list [--json]`: every skill keel finds for this workspace, where from, whether it is used, and why not. */
import { relative } from 'node:path';
import { ConfigError } from '../config/load.js';
import { loadSkills } from '../skills/load.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { existingWorkspace } from '../term/options.js';
import { reportError } from './errors.js';
import { dim, red } from './render.js';

export async function runSkillsList(flags: { cwd?: string; json?: boolean }): Promise<number> {
  let cwd: string;
  try {
    cwd = existingWorkspace(flags);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return reportError(flags.json, 'CONFIG_ERROR', err.message);
  }
  const set = await loadSkills({ root: cwd });
  const shown = (path: string) => {
    const rel = relative(cwd, path);
    return rel.startsWith('..') ? path : rel;
  };
  const skills = set.all.map((s) => ({
    name: s.name,
    description: s.description,
    source: s.source,
    ...(s.plugin ? { plugin: s.plugin } : {}),
    path: shown(s.dir),
    trusted: s.trusted,
    state: s.used ? 'used' : 'ignored',
    ...(s.allowedTools ? { allowed_tools: s.allowedTools } : {}),
    warnings: s.warnings,
  }));
  const skipped = set.skipped.map((s) => ({
    source: s.source,
    ...(s.plugin ? { plugin: s.plugin } : {}),
    path: shown(s.dir),
    reason: s.reason,
  }));
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ skills, skipped, warnings: set.warnings }, null, 2)}\n`);
    return EXIT.ok;
  }
  if (!skills.length && !skipped.length)
    process.stdout.write(
      dim('no skills (.agents/skills/ or .keel/skills/ in the project, skills/ in KEEL_HOME, or a plugin)\n'),
    );
  for (const s of skills) {
    const from = s.source === 'plugin' ? `plugin ${s.plugin}` : s.source;
    const state =
      s.state === 'used' ? '' : red(s.trusted ? ' [ignored]' : ' [ignored: not trusted, see keel trust]');
    process.stdout.write(
      `${inertLine(s.name)}  ${dim(`${from}, ${inertLine(s.path)}`)}${state}\n  ${inertLine(s.description)}\n`,
    );
    for (const w of s.warnings) process.stdout.write(`  ${red('warning:')} ${inertLine(w)}\n`);
  }
  for (const s of skipped)
    process.stdout.write(
      `${red('skipped')} ${inertLine(s.path)} ${dim(`(${s.source})`)}: ${inertLine(s.reason)}\n`,
    );
  for (const w of set.warnings) process.stdout.write(`${red('warning:')} ${inertLine(w)}\n`);
  return EXIT.ok;
}
