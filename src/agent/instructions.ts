/** Project instructions injected into the system prompt: AGENTS.md and .keel/instructions.md. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Cap per file: instructions share a small context window with everything else. */
const MAX_CHARS = 16_000;

export interface Instructions {
  files: string[];
  text: string;
}

/** Read the workspace's instruction files that exist, in a fixed order. */
export function loadInstructions(root: string): Instructions {
  const files: string[] = [];
  const parts: string[] = [];
  for (const name of ['AGENTS.md', join('.keel', 'instructions.md')]) {
    let text: string;
    try {
      text = readFileSync(join(root, name), 'utf8');
    } catch {
      continue;
    }
    const trimmed = text.trim();
    if (!trimmed) continue;
    files.push(name);
    const body =
      trimmed.length > MAX_CHARS
        ? `${trimmed.slice(0, MAX_CHARS)}\n[... ${name} cut at ${MAX_CHARS} chars]`
        : trimmed;
    parts.push(`# ${name}\n${body}`);
  }
  return { files, text: parts.join('\n\n') };
}
