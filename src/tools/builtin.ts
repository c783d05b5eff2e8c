/** The built-in tools, in the order the design's contract table lists them. */
import { editFileTool } from './edit-file.js';
import { globTool } from './glob.js';
import { grepTool } from './grep.js';
import { listDirTool } from './list-dir.js';
import { readFileTool } from './read-file.js';
import { runTestsTool } from './run-tests.js';
import { shellTool } from './shell.js';
import type { Tool } from './types.js';
import { writeFileTool } from './write-file.js';

/** All built-in tools: the read tools, then write, then exec. */
export function builtinTools(): Tool[] {
  return [
    readFileTool,
    listDirTool,
    globTool,
    grepTool,
    editFileTool,
    writeFileTool,
    shellTool,
    runTestsTool,
  ];
}
