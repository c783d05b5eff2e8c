/**
 * What a session is told about its skills: a catalog in the system prompt (a name and a description, one
 * line each), and `activate_skill`, whose `name` is one of the catalog's, returning a skill's body when the
 * model asks for it. A skill's `allowed-tools` come back with the body: from then on the session may use only
 * those (src/policy/tool-allowlist.ts), never more than its policy already allows.
 */
import { relative } from 'node:path';
import * as z from 'zod';
import { toolRules } from '../policy/tool-allowlist.js';
import type { Tool } from '../tools/types.js';
import type { Skill } from './load.js';

export const ACTIVATE_SKILL = 'activate_skill';

/** The catalog for the system prompt; empty when there is no skill (the prompt is then as it was). */
export function skillCatalog(skills: readonly Skill[]): string {
  if (!skills.length) return '';
  return [
    `Skills (instructions for particular tasks): when the task fits one, call ${ACTIVATE_SKILL} with its name first.`,
    ...skills.map((s) => `- ${s.name}: ${s.description}`),
  ].join('\n');
}

/** Where a skill's files are, as the model can reach them: in the workspace, or not readable in this session. */
function folderNote(skill: Skill, root: string): string {
  const rel = relative(root, skill.dir);
  if (rel && !rel.startsWith('..') && !rel.startsWith('/'))
    return `Its folder is ${rel}/ in the workspace: read its files (scripts/, references/, assets/) with read_file, and run its scripts with shell like any command.`;
  return `Its folder is ${skill.dir}, outside the workspace: keel's tools cannot read it or run its scripts in this session; work from these instructions alone.`;
}

/** `activate_skill`, for a session whose catalog holds these skills (at least one). */
export function activateSkillTool(skills: readonly Skill[], root: string): Tool {
  const names = skills.map((s) => s.name) as [string, ...string[]];
  const schema = z.object({ name: z.enum(names).describe('the skill to load') });
  return {
    name: ACTIVATE_SKILL,
    description: "Load a skill's instructions (see Skills in the system prompt).",
    effect: 'read',
    schema,
    async execute(args: z.infer<typeof schema>) {
      const skill = skills.find((s) => s.name === args.name);
      if (!skill) return { output: `Error: no skill "${args.name}"`, isError: true };
      const rules = skill.allowedTools ? toolRules(skill.allowedTools) : undefined;
      const narrowed = rules
        ? `\nWhile it is active this session may use only: ${rules.length ? rules.join(', ') : 'no tool'} (its allowed-tools; never more than the session already may).`
        : '';
      return {
        output: `Skill ${skill.name} (${skill.source}${skill.plugin ? ` plugin ${skill.plugin}` : ''}). ${folderNote(skill, root)}${narrowed}\n\n${skill.body}`,
        ...(rules ? { allowTools: { by: `skill ${skill.name}`, rules } } : {}),
      };
    },
  };
}
