/**
 * `/permissions`: the rules in force (mode, scope, sandbox, approvals, command rules) and persistent
 * command rules added from chat. `allow CMD` and `deny CMD` (also `always`, `never`) go to the user's
 * config and are in force from the next call; with `--project` they go to the project's keel.toml,
 * where a deny narrows at once and an allow waits for `keel trust` (it shows in `keel trust diff`).
 */
import { join } from 'node:path';
import { addCommandRule, type RuleKey } from '../config/command-rules-file.js';
import { ConfigError, projectConfigPath, readTomlFile } from '../config/load.js';
import { keelPaths } from '../config/paths.js';
import { inertLine } from '../term/inert.js';
import type { Screen } from './commands.js';
import type { Conversation } from './conversation.js';

const VERBS: Record<string, RuleKey> = {
  allow: 'allow_commands',
  always: 'allow_commands',
  deny: 'deny_commands',
  never: 'deny_commands',
};

export function permissionsCommand(arg: string, conv: Conversation, screen: Screen): void {
  const [verb = '', ...rest] = arg.split(/\s+/).filter(Boolean);
  if (!verb) {
    list(conv, screen);
    return;
  }
  const key = VERBS[verb];
  if (!key) {
    screen.error(
      `/permissions takes allow CMD or deny CMD (with --project for this project's keel.toml), got "${inertLine(verb)}"`,
    );
    return;
  }
  const project = rest[0] === '--project';
  const rule = (project ? rest.slice(1) : rest).join(' ');
  if (!rule) {
    screen.error(
      `/permissions ${verb} needs a command, such as /permissions ${verb} ${key === 'allow_commands' ? 'npm test' : 'git push'}`,
    );
    return;
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a rule is one line of printable text
  if (/[\x00-\x1f\x7f]/.test(rule)) {
    screen.error('a command rule is one line of printable text');
    return;
  }
  const file = project
    ? (conv.loadedConfig.projectFile ?? join(conv.cwd, 'keel.toml'))
    : keelPaths().userConfig;
  let added: boolean;
  try {
    added = addCommandRule(file, key, rule, project ? conv.cwd : undefined);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    screen.error(inertLine(err.message));
    return;
  }
  const what = `${key === 'allow_commands' ? 'always allow' : 'never'} \`${inertLine(rule)}\``;
  if (!added) {
    screen.lines([`${what} is in ${inertLine(file)} already`]);
    return;
  }
  // a project's allow widens what keel may do: only `keel trust` puts it in force
  const waits = project && key === 'allow_commands';
  if (!waits) conv.addCommandRule(key, rule, file);
  screen.lines([
    `${what}: saved to ${inertLine(file)}`,
    waits
      ? screen.style.yellow(
          'not in force until you trust the project config: keel trust diff, then keel trust',
        )
      : screen.style.dim(
          key === 'allow_commands'
            ? 'in force from the next call (still sandboxed; keel asks no question for it)'
            : 'in force from the next call',
        ),
  ]);
}

function list(conv: Conversation, screen: Screen): void {
  const { style } = screen;
  const config = conv.config;
  const source = (key: string) => conv.loadedConfig.sources[key] ?? 'default';
  const row = (k: string, v: string) => `  ${style.dim(k.padEnd(9))} ${v}`;
  const rules = (key: RuleKey) =>
    config[key].length
      ? `${config[key].map((r) => `\`${inertLine(r)}\``).join(', ')} ${style.dim(`(${inertLine(source(key))})`)}`
      : '(none)';
  const lines = [
    style.bold('permissions'),
    row('mode', conv.mode),
    row('scope', config.scope.map(inertLine).join(', ')),
    row(
      'sandbox',
      `${config.sandbox}${config.allow_shell ? ', allow_shell (unsandboxed when none runs)' : ''}`,
    ),
    row('approvals', config.approvals ?? 'default (a command outside the sandbox)'),
    row('allow', rules('allow_commands')),
    row('never', rules('deny_commands')),
  ];
  // a project's rules that its trust leaves out of force
  try {
    // read now: /permissions --project may have made the file since the chat began
    const file = projectConfigPath(conv.cwd);
    if (file) {
      const raw = readTomlFile(file);
      for (const key of ['allow_commands', 'deny_commands'] as const) {
        const theirs = Array.isArray(raw[key]) ? (raw[key] as unknown[]).map(String) : [];
        const waiting = theirs.filter((r) => !config[key].includes(r));
        if (waiting.length)
          lines.push(
            row(
              'waiting',
              `${waiting.map((r) => `\`${inertLine(r)}\``).join(', ')} ${style.yellow(`(${key} in ${inertLine(file)}: not in force until trusted; keel trust diff)`)}`,
            ),
          );
      }
    }
  } catch {
    // a broken project file is named by the loader already
  }
  lines.push(
    style.dim("  /permissions allow CMD · deny CMD (--project: this project's keel.toml, trust-gated)"),
  );
  screen.lines(lines);
}
