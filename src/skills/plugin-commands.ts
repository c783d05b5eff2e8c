/**
 * A plugin's commands (`commands` in keel-plugin.json): Markdown prompt templates, as Claude Code's are, with
 * optional front matter (`description`, `argument-hint`) and `$ARGUMENTS` (all the words typed after the
 * command's name) or `$1`..`$9` (one each) in the body. Only an approved plugin's commands run (its folder hashed
 * again, as for its hooks). Running one is a session with that prompt: the gate and
 * the session's policy decide everything it does, as for a prompt typed by hand. Nothing in the file runs or
 * narrows anything: Claude Code's `!`command`` lines and `allowed-tools` stay text and are not applied.
 * The YAML parser (front-matter.ts) is loaded only when a command file has front matter: a chat with no
 * plugin never loads it.
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync, readSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import { keelPaths } from '../config/paths.js';
import { type InstalledPlugin, installedPlugins } from '../config/plugins.js';
import { oneLine } from './text.js';

/** A command file is read up to this many bytes; a longer one is refused, not cut. */
export const MAX_COMMAND_BYTES = 64_000;

export interface PluginCommand {
  plugin: string;
  name: string;
  /** The file, canonical. */
  file: string;
  /** One line from the front matter, when it has one. */
  description?: string;
  /** The prompt before its placeholders are filled. */
  template: string;
}

/** A command that cannot be run; the message names the plugin, the command and the file. */
export class PluginCommandError extends Error {
  override name = 'PluginCommandError';
}

/** Read one command of an installed plugin: a regular file inside its folder, never through a link. */
export async function readPluginCommand(plugin: InstalledPlugin, name: string): Promise<PluginCommand> {
  const entry = plugin.manifest.commands.find((c) => c.name === name);
  if (!entry) {
    const names = plugin.manifest.commands.map((c) => c.name);
    throw new PluginCommandError(
      `plugin ${plugin.name} has no command "${oneLine(name, 64)}" (${names.length ? `its commands: ${names.join(', ')}` : 'it has no commands'})`,
    );
  }
  const where = `command ${plugin.name}:${name} (${entry.file})`;
  const root = realOr(plugin.dir);
  let fd: number;
  try {
    fd = openSync(
      join(plugin.dir, entry.file),
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new PluginCommandError(
      `${where}: ${code === 'ENOENT' ? 'no such file in the plugin' : code === 'ELOOP' ? 'the file is a symlink' : `cannot be opened (${code})`}`,
    );
  }
  let text: string;
  let file: string;
  try {
    if (!fstatSync(fd).isFile()) throw new PluginCommandError(`${where}: not a regular file`);
    file = openedPath(fd) ?? realOr(join(plugin.dir, entry.file));
    if (!inside(root, file)) throw new PluginCommandError(`${where}: the file leads outside the plugin`);
    const buf = Buffer.alloc(MAX_COMMAND_BYTES + 1);
    let got = 0;
    for (let n = 1; n > 0 && got < buf.length; got += n) n = readSync(fd, buf, got, buf.length - got, got);
    if (got > MAX_COMMAND_BYTES) throw new PluginCommandError(`${where}: over ${MAX_COMMAND_BYTES} bytes`);
    text = new TextDecoder('utf-8').decode(buf.subarray(0, got)).replace(/^\uFEFF/, '');
  } finally {
    closeSync(fd);
  }
  let template = text;
  let description: string | undefined;
  if (/^---[ \t]*\r?\n/.test(text)) {
    const { parseSkillFile } = await import('./front-matter.js');
    const parsed = parseSkillFile(text);
    if (!parsed.ok) throw new PluginCommandError(`${where}: ${parsed.error}`);
    template = parsed.body;
    if (typeof parsed.data.description === 'string') description = oneLine(parsed.data.description, 200);
  }
  template = template.trim();
  if (!template) throw new PluginCommandError(`${where}: the prompt is empty`);
  return { plugin: plugin.name, name, file, ...(description ? { description } : {}), template };
}

/** A description in chat's lists (/help, completion) is cut here: one line of the screen. */
export const MAX_LISTED_DESCRIPTION = 80;

/** A command as chat lists it: its description is plugin text made plain (one line, no controls, cut). */
export interface ListedCommand {
  plugin: string;
  name: string;
  description?: string;
}

/**
 * The commands chat offers (`/help`, completion): those of the plugins whose folder is still the one the person
 * approved (hashed again now, as `pluginUnapproved` does); a command whose file cannot be read is listed bare.
 */
export async function approvedPluginCommands(env: NodeJS.ProcessEnv = process.env): Promise<ListedCommand[]> {
  const listed: ListedCommand[] = [];
  for (const plugin of installedPlugins(keelPaths(env).pluginsDir).plugins) {
    if (!plugin.approved) continue;
    for (const { name } of plugin.manifest.commands) {
      let description: string | undefined;
      try {
        const read = (await readPluginCommand(plugin, name)).description;
        description = read ? oneLine(read, MAX_LISTED_DESCRIPTION) : undefined;
      } catch (err) {
        if (!(err instanceof PluginCommandError)) throw err;
      }
      listed.push({ plugin: plugin.name, name, ...(description ? { description } : {}) });
    }
  }
  return listed;
}

/**
 * The prompt `/PLUGIN:COMMAND ARGS` (chat) or `keel plugin run PLUGIN COMMAND ARGS` stands for; throws
 * PluginCommandError, also for a plugin whose folder is not the one the person approved (hashed again now).
 */
export async function pluginPrompt(
  plugin: string,
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const found = installedPlugins(keelPaths(env).pluginsDir).plugins.find((p) => p.name === plugin);
  if (!found)
    throw new PluginCommandError(
      `no plugin named ${JSON.stringify(oneLine(plugin, 64))} is installed (keel plugin list)`,
    );
  // the prompt is the plugin author's words in the person's session: only a folder the person approved speaks
  if (!found.approved)
    throw new PluginCommandError(
      `plugin ${found.name} is not approved: ${found.unapproved ?? 'it was never approved'}; its commands do not run and nothing was sent to the model: run \`keel plugin approve ${found.name}\` to review and approve it`,
    );
  return expandCommand((await readPluginCommand(found, command)).template, args);
}

/**
 * The prompt with its placeholders filled: `$ARGUMENTS` is every word, `$1`..`$9` one each (empty when not
 * given). A template with no placeholder gets the words after it on a line of their own, as Claude Code does.
 */
export function expandCommand(template: string, args: readonly string[]): string {
  const all = args.join(' ');
  const placeholders = /\$ARGUMENTS|\$[1-9]/;
  if (!placeholders.test(template)) return all ? `${template}\n\nARGUMENTS: ${all}` : template;
  return template.replace(/\$ARGUMENTS|\$([1-9])/g, (_match, digit: string | undefined) =>
    digit === undefined ? all : (args[Number(digit) - 1] ?? ''),
  );
}

function openedPath(fd: number): string | null {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
}

function realOr(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    return path;
  }
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}
