/**
 * The memory tools a session offers, folded into one `memory` tool: `remember` (effect `memory`, gated
 * like any effect) writes a note marked as the model's; `recall` (read) searches the project's memory.
 */
import * as z from 'zod';
import { fold } from '../tools/family.js';
import { type Tool, type ToolDeps, ToolError, type ToolFactory } from '../tools/types.js';
import { injectedLine } from './inject.js';
import { openMemory } from './open.js';

const MAX_TEXT = 2000;

const rememberSchema = z.object({
  text: z.string().min(1).max(MAX_TEXT).describe('remember: one or two sentences'),
  tags: z.array(z.string().min(1).max(40)).max(8).optional(),
});
const recallSchema = z.object({
  query: z.string().min(1).describe('recall: words, file names or identifiers'),
  k: z.number().int().min(1).max(20).optional().describe('default 5'),
});

/** remember and recall for one session, on the memory of the session's project. */
export const memoryTools: ToolFactory = (deps: ToolDeps): Tool[] => {
  const open = () =>
    openMemory({ dir: deps.policy.scope.root, config: deps.loaded.config, env: deps.env, pinned: true });

  const remember: Tool<typeof rememberSchema> = {
    name: 'remember',
    description: 'Keep a short note (a decision, convention or pitfall) for later sessions in this project.',
    effect: 'memory',
    schema: rememberSchema,
    async execute(args) {
      const m = open();
      try {
        const { item, folded } = await m.memory.add({
          kind: 'note',
          text: args.text,
          tags: args.tags ?? [],
          author: 'model',
          sessionId: deps.sessionId,
        });
        return {
          output: folded ? `already remembered as ${item.id}; refreshed` : `remembered as ${item.id}`,
        };
      } finally {
        m.close();
      }
    },
  };

  const recall: Tool<typeof recallSchema> = {
    name: 'recall',
    description:
      "Search this project's memory from earlier sessions (notes, decisions, files changed, test outcomes).",
    effect: 'read',
    schema: recallSchema,
    async execute(args) {
      const m = open();
      try {
        const hits = await m.memory.search(args.query, args.k ?? 5);
        if (!hits.length) return { output: 'nothing remembered matches' };
        return { output: hits.map((h) => `${h.item.id} ${injectedLine(h.item).slice(2)}`).join('\n') };
      } catch (err) {
        throw new ToolError(`recall failed: ${(err as Error).message}`);
      } finally {
        m.close();
      }
    },
  };
  return [
    fold(
      'memory',
      'Project memory across sessions: remember a short note (decision, convention, pitfall), or recall notes and past work.',
      { remember, recall } as Record<string, Tool>,
    ),
  ];
};
