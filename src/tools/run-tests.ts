/** run_tests: run the project's configured test command and read back per-test results. */
import * as z from 'zod';
import { type Tool, ToolError } from './types.js';

const schema = z.object({
  filter: z.string().optional().describe('test name or file'),
});

/** The run_tests tool. */
export const runTestsTool: Tool<typeof schema> = {
  name: 'run_tests',
  description: "Run the project's tests, or those matching filter; returns counts and failures.",
  effect: 'exec',
  // its effects stay in the workspace: a resumed run restores the tree and runs it again
  resume: 'worktree',
  schema,
  paths: () => [],
  async execute(args, ctx) {
    if (!ctx.runTests) {
      throw new ToolError('no test command is configured or detected here; set test_command in keel.toml');
    }
    const filter = args.filter?.trim() || undefined;
    const result = await ctx.runTests(filter, ctx.signal);
    return {
      output: result.output,
      isError: result.failed,
      ...(result.tests ? { outcome: { tests: result.tests } } : {}),
    };
  },
};
