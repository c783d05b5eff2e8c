/** `keel trust`, `keel trust diff`, `keel trust check`: review and accept what a project config may do. */
import { relative } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { ConfigError, projectConfigPath, type Raw, readTomlFile, splitConfigFile } from '../config/load.js';
import { realRoot } from '../config/narrowing.js';
import { keelPaths } from '../config/paths.js';
import { installedPlugins } from '../config/plugins.js';
import { configPrograms, type Program } from '../config/programs.js';
import {
  gatedKeys,
  permissionChanges,
  trustCheck,
  trustedHash,
  trustFile,
  trustHashes,
} from '../config/trust.js';
import { readWorkflowFile, WORKFLOWS_DIR, WorkflowError, workflowFiles } from '../hub/workflow-file.js';
import { type WorkflowChange, workflowChanges } from '../hub/workflow-trust.js';
import { findRepo, gitTry } from '../policy/git.js';
import { loadSkills, type Skill } from '../skills/load.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { existingWorkspace, workspace } from '../term/options.js';
import { reportError } from './errors.js';
import { dim, red } from './render.js';

function noProjectConfig(cwd: string, json?: boolean): number {
  return reportError(
    json,
    'CONFIG_ERROR',
    `no project config in ${cwd} (looked for keel.toml and .keel/config.toml)`,
  );
}

/**
 * The project config file (undefined: none, which is fine when the project has skills or workflows, or
 * plugins are installed), or the exit code after saying why there is none (or two, or no such folder).
 */
async function findProjectConfig(
  cwd: string | undefined,
  json?: boolean,
): Promise<string | undefined | number> {
  try {
    const folder = existingWorkspace({ cwd });
    const file = projectConfigPath(folder);
    if (
      file === undefined &&
      workflowFiles(folder).length === 0 &&
      !(await projectSkills(folder)).length &&
      !hasPlugins()
    )
      return noProjectConfig(folder, json);
    return file;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return reportError(json, 'CONFIG_ERROR', err.message);
  }
}

/** The project's skills that read (used or not: trust is what they wait for). */
async function projectSkills(cwd: string): Promise<Skill[]> {
  return (await loadSkills({ root: cwd })).all.filter((s) => s.source === 'project');
}

function hasPlugins(): boolean {
  return installedPlugins(keelPaths().pluginsDir).plugins.length > 0;
}

/** Trust each of the project's workflow files as it is now; each must be valid first (else the exit code). */
function trustWorkflows(
  cwd: string,
  json?: boolean,
): { name: string; file: string; sha256: string }[] | number {
  const found = workflowFiles(cwd);
  try {
    for (const { file } of found) readWorkflowFile(file);
  } catch (err) {
    if (!(err instanceof WorkflowError)) throw err;
    return reportError(json, 'CONFIG_ERROR', `${err.message} (nothing was trusted)`);
  }
  return found.map(({ name, file }) => ({ name, file, sha256: trustFile(file, keelPaths().trustFile) }));
}

/** Trust the workspace's project config, skills and workflows as they are now. */
export async function runTrust(flags: { cwd?: string; json?: boolean }): Promise<number> {
  const file = await findProjectConfig(flags.cwd, flags.json);
  if (typeof file === 'number') return file;
  const cwd = workspace(flags);
  const skills = await projectSkills(cwd);
  // installed plugins let `trust diff` run without a config; there is nothing of the project's to trust then
  if (file === undefined && !skills.length && !workflowFiles(cwd).length)
    return noProjectConfig(cwd, flags.json);
  // every workflow must be valid before anything is trusted
  const workflows = trustWorkflows(cwd, flags.json);
  if (typeof workflows === 'number') return workflows;
  trustHashes(
    skills.map((s) => ({ path: s.file, sha256: s.sha256 })),
    keelPaths().trustFile,
  );
  const trustedSkills = skills.map((s) => ({ name: s.name, path: relative(cwd, s.file), sha256: s.sha256 }));
  const values = file === undefined ? {} : readTomlFile(file);
  const grants = gatedKeys(values, cwd);
  const programs = file === undefined ? [] : projectPrograms(values, file, cwd);
  const hash = file === undefined ? null : trustFile(file, keelPaths().trustFile, programs);
  if (flags.json) {
    const runs = programs.map((p) => ({ path: p.name, by: p.by, sha256: p.sha256 }));
    process.stdout.write(
      `${JSON.stringify({ file: file ?? null, sha256: hash, grants, programs: runs, skills: trustedSkills, workflows })}\n`,
    );
    return EXIT.ok;
  }
  for (const w of workflows)
    process.stdout.write(
      `trusted workflow ${inertLine(w.name)} (${inertLine(w.file)}, sha256 ${w.sha256.slice(0, 12)}): signed webhooks may start its runs\n`,
    );
  if (file === undefined || hash === null) {
    writeTrustedSkills(trustedSkills);
    return EXIT.ok;
  }
  process.stdout.write(`trusted ${file} (sha256 ${hash.slice(0, 12)})\n`);
  writeTrustedSkills(trustedSkills);
  process.stdout.write(
    grants.length ? `it may now set: ${grants.join(', ')}\n` : dim('it sets no trust-gated keys\n'),
  );
  for (const p of programs)
    process.stdout.write(
      `it runs on the host: ${inertLine(p.name)} (${inertLine(p.by)}${p.sha256 === null ? ', absent: trusted to stay so' : ''})\n`,
    );
  process.stdout.write(
    dim(
      `if the file${programs.length ? ' or a program it runs' : ''} changes, these keys are ignored again until you trust it anew\n`,
    ),
  );
  return EXIT.ok;
}

function writeTrustedSkills(skills: Array<{ name: string; path: string }>): void {
  for (const s of skills)
    process.stdout.write(`trusted skill ${inertLine(s.name)} (${inertLine(s.path)}): it joins the catalog\n`);
  if (skills.length)
    process.stdout.write(dim('if a SKILL.md changes, that skill is ignored again until you trust it anew\n'));
}

/** The programs in the workspace that a project config's hooks and servers run, its profiles' included. */
function projectPrograms(values: Raw, file: string, cwd: string): Program[] {
  const parts = splitConfigFile(values, file);
  const root = realRoot(cwd);
  const hashes = new Map<string, string | null>();
  return [parts.values, ...parts.profiles.values()].flatMap((v) =>
    configPrograms(v, root, process.env.PATH, hashes),
  );
}

/** The file at a revision, through the hardened runner in the workspace's repository (none: undefined). */
function gitShow(cwd: string, rev: string, path: string): string | undefined {
  const repo = findRepo(cwd);
  if (!repo) return undefined;
  // `./` makes the path relative to cwd, which may be a subfolder of the repository
  return gitTry(cwd, ['show', '--end-of-options', `${rev}:./${path}`]);
}

/** Permission changes of the project config against a git revision; `check` exits 1 on any expansion. */
export async function runTrustDiff(
  flags: { cwd?: string; json?: boolean; base?: string },
  check: boolean,
): Promise<number> {
  const base = flags.base ?? 'HEAD';
  const file = await findProjectConfig(flags.cwd, flags.json);
  if (typeof file === 'number') return file;
  const cwd = workspace(flags);
  const extra = await skillsAndPlugins(cwd);
  let workflows: WorkflowChange[];
  try {
    workflows = baseWorkflowChanges(cwd, base);
  } catch (err) {
    if (!(err instanceof WorkflowError)) throw err;
    return reportError(flags.json, 'CONFIG_ERROR', err.message);
  }
  const widened = workflows.filter((w) => w.change === 'added' || w.change === 'changed');
  if (file === undefined) {
    if (flags.json)
      process.stdout.write(
        `${JSON.stringify({ file: null, base, trust: null, changes: [], programs: [], ...extra, workflows }, null, 2)}\n`,
      );
    else {
      if (!extra.skills.length && !workflows.length)
        process.stdout.write(dim(`no project config, skills or workflows in ${cwd}; installed plugins:\n`));
      writeSkillsAndPlugins(extra);
      writeWorkflowChanges(workflows);
    }
    if (!check || !widened.length) return EXIT.ok;
    if (!flags.json) workflowsWidened(widened);
    return EXIT.failed;
  }
  const rel = relative(cwd, file);
  const before = gitShow(cwd, base, rel);
  let beforeValues: Raw;
  try {
    beforeValues = before === undefined ? {} : (parseToml(before) as Raw);
  } catch (err) {
    const why = (err as Error).message.split('\n')[0] ?? '';
    return reportError(flags.json, 'CONFIG_ERROR', `${rel} at ${base} is not valid TOML: ${why}`);
  }
  const values = readTomlFile(file);
  const changes = permissionChanges(beforeValues, values, cwd);
  const expansions = changes.filter((c) => c.kind === 'expansion');
  const running = projectPrograms(values, file, cwd);
  const { state, changed } = trustCheck(file, keelPaths().trustFile, running);
  const programs = running.map((p) => ({
    path: p.name,
    by: p.by,
    state: state === 'untrusted' ? 'untrusted' : changed.includes(p) ? 'changed' : 'trusted',
  }));
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ file, base, trust: state, changes, programs, ...extra, workflows }, null, 2)}\n`,
    );
  } else {
    if (!changes.length) process.stdout.write(`no permission changes in ${rel} since ${base}\n`);
    for (const c of changes)
      process.stdout.write(
        `${c.kind === 'expansion' ? red('+ expands') : '- narrows'}  ${inertLine(c.detail)}\n`,
      );
    if (before === undefined)
      process.stdout.write(dim(`(${rel} does not exist at ${base}; compared against no config)\n`));
    // what trust covers besides the file: a program it runs that is not as trusted makes it untrusted
    for (const p of programs.filter((x) => x.state === 'changed'))
      process.stdout.write(
        `${red('~ changed')}  ${inertLine(p.path)} changed since you trusted ${rel} (run by ${inertLine(p.by)}); its hooks and servers are ignored until \`keel trust\`\n`,
      );
    writeSkillsAndPlugins(extra);
    writeWorkflowChanges(workflows);
  }
  if (check && (expansions.length || widened.length)) {
    if (!flags.json && expansions.length)
      process.stderr.write(
        `${red('keel:')} ${expansions.length} permission expansion${expansions.length === 1 ? '' : 's'} in ${rel}\n`,
      );
    if (!flags.json && widened.length) workflowsWidened(widened);
    return EXIT.failed;
  }
  return EXIT.ok;
}

interface SkillsAndPlugins {
  /** The project's skills: trusted as they are, changed since trusted, or never trusted. */
  skills: Array<{ name: string; path: string; trust: 'trusted' | 'changed' | 'untrusted' }>;
  /** Installed plugins (the user's, not the project's) and what each widens, approved at install or not. */
  plugins: Array<{ name: string; approved: boolean; unapproved?: string; widens: string[] }>;
}

/** What besides the config file trust covers: the project's skills, and the plugins that widen. */
async function skillsAndPlugins(cwd: string): Promise<SkillsAndPlugins> {
  const store = keelPaths().trustFile;
  const skills = (await projectSkills(cwd)).map((s) => {
    const recorded = trustedHash(s.file, store);
    const trust = recorded === undefined ? 'untrusted' : recorded === s.sha256 ? 'trusted' : 'changed';
    return { name: s.name, path: relative(cwd, s.file), trust } as const;
  });
  const plugins = installedPlugins(keelPaths().pluginsDir).plugins.map((p) => ({
    name: p.name,
    approved: p.approved,
    ...(p.unapproved ? { unapproved: p.unapproved } : {}),
    widens: p.widens,
  }));
  return { skills, plugins };
}

function writeSkillsAndPlugins({ skills, plugins }: SkillsAndPlugins): void {
  for (const s of skills) {
    const what = `skill ${inertLine(s.name)} (${inertLine(s.path)})`;
    if (s.trust === 'trusted') process.stdout.write(`  trusted  ${what}\n`);
    else
      process.stdout.write(
        `${red(s.trust === 'changed' ? '~ changed' : '+ new    ')}  ${what}: ignored until \`keel trust\`\n`,
      );
  }
  for (const p of plugins) {
    if (!p.approved)
      process.stdout.write(
        `${red('! plugin ')} ${inertLine(p.name)} not approved: ${inertLine(p.unapproved ?? '')} (\`keel plugin approve ${inertLine(p.name)}\` to review it)\n`,
      );
    for (const line of p.widens)
      process.stdout.write(
        `${p.approved ? '  plugin ' : red('! plugin ')} ${inertLine(p.name)} ${p.approved ? 'widens' : 'would widen (not approved: ignored)'}: ${inertLine(line)}\n`,
      );
  }
}

/** Each workflow against the base revision (git show of `.keel/workflows/NAME.yaml`). */
function baseWorkflowChanges(cwd: string, base: string): WorkflowChange[] {
  const listing = gitShow(cwd, base, WORKFLOWS_DIR);
  // `git show REV:folder` lists the folder: a header line, a blank line, then one name a line
  const names = (listing ?? '')
    .split('\n')
    .slice(2)
    .filter((n) => n.endsWith('.yaml'))
    .map((n) => n.slice(0, -5));
  return workflowChanges(
    cwd,
    keelPaths().trustFile,
    (name) => (names.includes(name) ? gitShow(cwd, base, `${WORKFLOWS_DIR}/${name}.yaml`) : undefined),
    names,
  );
}

function writeWorkflowChanges(workflows: WorkflowChange[]): void {
  for (const w of workflows) {
    const name = inertLine(w.name);
    const untrusted =
      w.trust === 'untrusted' || w.trust === 'changed' ? ` (${w.trust}: refused until \`keel trust\`)` : '';
    if (w.change === 'added')
      process.stdout.write(
        `${red('+ expands')}  workflow ${name} added: signed webhooks may start its runs${untrusted}\n`,
      );
    if (w.change === 'changed')
      process.stdout.write(
        `${red('+ expands')}  workflow ${name} changed: ${w.fields.map(inertLine).join(', ')}${untrusted}\n`,
      );
    if (w.change === 'removed') process.stdout.write(`- narrows  workflow ${name} removed\n`);
    if (w.change === 'unchanged' && untrusted)
      process.stdout.write(`${red('~ changed')}  workflow ${name}${untrusted}\n`);
  }
}

function workflowsWidened(widened: WorkflowChange[]): void {
  process.stderr.write(
    `${red('keel:')} ${widened.length} workflow${widened.length === 1 ? '' : 's'} added or changed in ${WORKFLOWS_DIR}\n`,
  );
}
