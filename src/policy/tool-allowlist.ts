/**
 * A list of the tools a session may still use, from a skill's `allowed-tools` once activated: it can only
 * narrow. A call must be on every list in force and still passes the gate as before, so a list naming a tool
 * the mode denies gives nothing. Rules are keel's tool names, or `shell(PREFIX)` for commands that are the
 * prefix's words then plain arguments (command-rules.ts `allowedBy`). The Agent Skills spellings of Claude's
 * tools (`Read`, `Bash(git:*)`, ...) are read as keel's.
 */
import { allowedBy, commandLine } from './command-rules.js';

const ALIASES: Record<string, string> = {
  read: 'read_file',
  write: 'write_file',
  edit: 'edit_file',
  multiedit: 'edit_file',
  grep: 'grep',
  glob: 'glob',
  ls: 'list_dir',
  bash: 'shell',
};

/** Tools that stay usable under any list: loading another skill, and listing what exists. */
const ALWAYS = new Set(['activate_skill', 'tools']);

/** keel's rules for the entries of an `allowed-tools` (unknown names are kept: they can only match a tool of that name). */
export function toolRules(entries: readonly string[]): string[] {
  const rules = entries.map((entry) => {
    const m = /^([A-Za-z0-9_.-]+)(?:\((.*)\))?$/.exec(entry.trim());
    if (!m?.[1]) return entry;
    const name = ALIASES[m[1].toLowerCase()] ?? m[1];
    const arg = m[2]
      ?.replace(/:\*$/, '')
      .replace(/\s*\*$/, '')
      .trim();
    return name === 'shell' && arg ? `shell(${arg})` : name;
  });
  return [...new Set(rules)];
}

export interface ToolList {
  /** Who set it: `skill NAME`. */
  by: string;
  rules: readonly string[];
}

/**
 * Why a call is off the lists in force, or undefined when every list allows it. A tool that starts a child
 * session is refused under any list: the child would get the session's policy without the list.
 */
export function offList(
  lists: readonly ToolList[],
  tool: { name: string; child?: unknown },
  args: unknown,
): string | undefined {
  if (!lists.length || ALWAYS.has(tool.name)) return undefined;
  for (const list of lists) {
    if (tool.child)
      return `${tool.name} is off while ${list.by} is active (a child would not be bound by its allowed-tools)`;
    const line = commandLine(args);
    const ok = list.rules.some((rule) => {
      if (rule === tool.name) return true;
      const m = /^(\w+)\((.+)\)$/.exec(rule);
      return m?.[1] === tool.name && line !== undefined && allowedBy(line, [m[2] as string]) !== undefined;
    });
    if (!ok)
      return `${list.by} allows only ${list.rules.length ? list.rules.join(', ') : 'no tool'} (its allowed-tools); ${tool.name}${line !== undefined ? ` ${JSON.stringify(line)}` : ''} is not among them`;
  }
  return undefined;
}
