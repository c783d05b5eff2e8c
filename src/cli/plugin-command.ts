/**
 * `keel plugin install|list|remove|run`. Install shows what the plugin brings and everything it would widen (an
 * MCP server, a hook, a command allowed without asking); a widening plugin needs the person's yes, typed at
 * a terminal, or `--yes` from a script. Without a terminal and without --yes it is refused, and nothing is
 * installed. The yes is recorded with the manifest's hash and every file of the folder: a plugin changed later
 * widens nothing until `approve` shows it again (with what changed) and the person says yes again. `run` starts a
 * session whose prompt is one of the plugin's commands, filled with the words after it.
 */
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keelPaths } from '../config/paths.js';
import {
  APPROVALS,
  type Approval,
  filesChanged,
  installedPlugins,
  MANIFEST,
  PLUGIN_NAME,
  type PluginManifest,
  pluginFiles,
  pluginWidening,
  readApprovals,
  readManifest,
} from '../config/plugins.js';
import { MODES, type Mode } from '../config/schema.js';
import { PluginCommandError, pluginPrompt } from '../skills/plugin-commands.js';
import { PluginSourceError, stagePlugin } from '../skills/plugin-source.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { confirmOrExit } from './ask-line.js';
import { reportError } from './errors.js';
import { dim, red } from './render.js';
import type { VerbFlags } from './session-command.js';
import { usageError } from './usage.js';

function writeApprovals(dir: string, approvals: Record<string, Approval>): void {
  const file = join(dir, APPROVALS);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(approvals, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

function describe(m: PluginManifest): string[] {
  return [
    `plugin ${inertLine(m.name)}${m.version ? ` ${inertLine(m.version)}` : ''}${m.description ? `: ${inertLine(m.description)}` : ''}`,
    ...m.skills.map((s) => `  skill folder ${inertLine(s)}`),
    ...m.commands.map(
      (c) =>
        `  command ${inertLine(c.name)} (${inertLine(c.file)}; keel plugin run ${inertLine(m.name)} ${inertLine(c.name)} [ARGS])`,
    ),
  ];
}

/**
 * Show the plugin and what it widens, and ask the person (a terminal, or --yes): undefined when they said yes or
 * nothing needs a yes, else the exit code after saying why not.
 */
async function askWidening(
  manifest: PluginManifest,
  widens: string[],
  flags: { yes?: boolean; json?: boolean },
  verb: 'install' | 'approve',
): Promise<number | undefined> {
  if (!flags.json) {
    process.stderr.write(`${describe(manifest).join('\n')}\n`);
    if (widens.length) {
      process.stderr.write(`${red('it widens what keel may do:')}\n`);
      for (const line of widens) process.stderr.write(`  ${red('+')} ${inertLine(line)}\n`);
    }
  }
  if (!widens.length || flags.yes) return undefined;
  const terminal = process.stdin.isTTY === true && process.stderr.isTTY === true && !flags.json;
  if (!terminal)
    return reportError(
      flags.json,
      'CONFIG_ERROR',
      `plugin ${manifest.name} widens what keel may do (${widens.join('; ')}); no terminal to ask you: pass --yes to approve it`,
    );
  if (!(await confirmOrExit(`  ${verb} ${manifest.name} and allow all of this? [y/N] `))) {
    process.stderr.write(
      `${red('keel:')} not ${verb === 'install' ? 'installed' : 'approved'}: you said no\n`,
    );
    return EXIT.failed;
  }
  return undefined;
}

export async function runPluginInstall(
  source: string,
  flags: { yes?: boolean; json?: boolean },
): Promise<number> {
  const { pluginsDir } = keelPaths();
  let staged: { stage: string; root: string };
  try {
    staged = stagePlugin(source, pluginsDir);
  } catch (err) {
    if (err instanceof PluginSourceError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    throw err;
  }
  try {
    const read = readManifest(staged.root);
    if ('error' in read)
      return reportError(flags.json, 'CONFIG_ERROR', read.error.replace(staged.root, source));
    const { manifest, sha256 } = read;
    const target = join(pluginsDir, manifest.name);
    if (existsSync(target))
      return reportError(
        flags.json,
        'CONFIG_ERROR',
        `a plugin named ${manifest.name} is installed already; run \`keel plugin remove ${manifest.name}\` first`,
      );
    const files = pluginFiles(staged.root);
    if ('error' in files)
      return reportError(flags.json, 'CONFIG_ERROR', `plugin ${manifest.name}: ${files.error}`);
    const widens = pluginWidening(manifest);
    const refused = await askWidening(manifest, widens, flags, 'install');
    if (refused !== undefined) return refused;
    mkdirSync(pluginsDir, { recursive: true });
    renameSync(staged.root, target);
    const approvals = readApprovals(pluginsDir);
    approvals[manifest.name] = { sha256, source, widens, files: files.files };
    writeApprovals(pluginsDir, approvals);
    if (flags.json)
      process.stdout.write(
        `${JSON.stringify({ name: manifest.name, path: target, skills: manifest.skills, widens })}\n`,
      );
    else process.stdout.write(`installed plugin ${inertLine(manifest.name)} in ${inertLine(target)}\n`);
    return EXIT.ok;
  } finally {
    rmSync(staged.stage, { recursive: true, force: true });
  }
}

/**
 * `keel plugin approve NAME`: the installed plugin as it is now (what changed since the last yes, and everything
 * it widens) is shown and needs the person's yes again; the yes records its manifest and files as they are.
 */
export async function runPluginApprove(
  name: string,
  flags: { yes?: boolean; json?: boolean },
): Promise<number> {
  const { pluginsDir } = keelPaths();
  if (!PLUGIN_NAME.test(name))
    return reportError(flags.json, 'CONFIG_ERROR', `no plugin named ${JSON.stringify(name)}`);
  const dir = join(pluginsDir, name);
  if (!existsSync(dir))
    return reportError(flags.json, 'CONFIG_ERROR', `no plugin named ${name} is installed`);
  const read = readManifest(dir);
  if ('error' in read) return reportError(flags.json, 'CONFIG_ERROR', read.error);
  if (read.manifest.name !== name)
    return reportError(
      flags.json,
      'CONFIG_ERROR',
      `${dir}: its ${MANIFEST} names it "${read.manifest.name}"`,
    );
  const files = pluginFiles(dir);
  if ('error' in files)
    return reportError(
      flags.json,
      'CONFIG_ERROR',
      `plugin ${name} cannot be approved: ${files.error} in ${dir}`,
    );
  const approvals = readApprovals(pluginsDir);
  const before = approvals[name];
  const changed = before?.files ? filesChanged(before.files, files.files) : [];
  if (!flags.json && changed.length) {
    process.stderr.write(`${red('changed since you approved it:')}\n`);
    for (const line of changed) process.stderr.write(`  ${red('~')} ${inertLine(line)}\n`);
  }
  const widens = pluginWidening(read.manifest);
  const refused = await askWidening(read.manifest, widens, flags, 'approve');
  if (refused !== undefined) return refused;
  approvals[name] = { sha256: read.sha256, source: before?.source ?? dir, widens, files: files.files };
  writeApprovals(pluginsDir, approvals);
  if (flags.json) process.stdout.write(`${JSON.stringify({ name, approved: true, changed, widens })}\n`);
  else process.stdout.write(`approved plugin ${inertLine(name)} as it is in ${inertLine(dir)}\n`);
  return EXIT.ok;
}

export async function runPluginList(flags: { json?: boolean }): Promise<number> {
  const { plugins, warnings } = installedPlugins(keelPaths().pluginsDir);
  const rows = plugins.map((p) => ({
    name: p.name,
    version: p.manifest.version ?? null,
    description: p.manifest.description ?? null,
    path: p.dir,
    skills: p.manifest.skills,
    commands: p.manifest.commands.map((c) => c.name),
    widens: p.widens,
    approved: p.approved,
  }));
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ plugins: rows, warnings }, null, 2)}\n`);
    return EXIT.ok;
  }
  if (!rows.length)
    process.stdout.write(dim('no plugins installed (keel plugin install DIR|GIT-URL|TARBALL)\n'));
  for (const p of plugins) {
    process.stdout.write(`${describe(p.manifest).join('\n')}\n`);
    for (const line of p.widens)
      process.stdout.write(`  ${p.approved ? 'widens' : red('not approved, ignored')}: ${inertLine(line)}\n`);
  }
  for (const w of warnings) process.stdout.write(`${red('warning:')} ${inertLine(w)}\n`);
  return EXIT.ok;
}

export async function runPluginRemove(name: string, flags: { json?: boolean }): Promise<number> {
  const { pluginsDir } = keelPaths();
  if (!PLUGIN_NAME.test(name))
    return reportError(flags.json, 'CONFIG_ERROR', `no plugin named ${JSON.stringify(name)}`);
  const dir = join(pluginsDir, name);
  if (!existsSync(dir))
    return reportError(flags.json, 'CONFIG_ERROR', `no plugin named ${name} is installed`);
  const approvals = readApprovals(pluginsDir);
  delete approvals[name];
  writeApprovals(pluginsDir, approvals);
  rmSync(dir, { recursive: true, force: true });
  if (flags.json) process.stdout.write(`${JSON.stringify({ removed: name })}\n`);
  else process.stdout.write(`removed plugin ${name}\n`);
  return EXIT.ok;
}

export interface PluginRunFlags extends VerbFlags {
  mode?: string;
}

/**
 * `keel plugin run NAME COMMAND [ARGS...]`: a session (in `--mode`, else the configured `permission` mode) whose
 * prompt is the command's template with ARGS filled in. It is a prompt like any other: the gate and the
 * session's policy decide what it may do.
 */
export async function runPluginCommand(
  name: string,
  command: string,
  args: string[],
  flags: PluginRunFlags,
): Promise<number> {
  const { mode, ...verbFlags } = flags;
  if (mode !== undefined && !(MODES as readonly string[]).includes(mode))
    return usageError(flags.json, `--mode must be one of ${MODES.join(', ')}, not ${JSON.stringify(mode)}`);
  let prompt: string;
  try {
    prompt = await pluginPrompt(name, command, args);
  } catch (err) {
    if (err instanceof PluginCommandError) return reportError(flags.json, 'CONFIG_ERROR', err.message);
    throw err;
  }
  const { runVerb } = await import('./session-command.js');
  return runVerb(mode as Mode | undefined, [], { ...verbFlags, message: prompt });
}
