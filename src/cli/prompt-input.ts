/** Where the task text comes from: arguments, -m, and stdin when it is piped. */
import { fstatSync } from 'node:fs';

/**
 * The prompt, or undefined when none was given anywhere. A piped stdin is read to its end: alone it is
 * the prompt; after words (`npm test 2>&1 | keel ask "why does this fail"`) it is appended to them as
 * a fenced block, as people do with other agents.
 */
export async function readPrompt(words: string[], message: string | undefined): Promise<string | undefined> {
  const parts = [message, words.join(' ')].filter((p): p is string => Boolean(p?.trim()));
  if (process.stdin.isTTY) return parts.length ? parts.join('\n\n') : undefined;
  if (!parts.length) return readStdin();
  if (!stdinIsPipedData()) return parts.join('\n\n');
  // only the end is trimmed: the first line of a log or a listing keeps its indentation
  const piped = (await readAllStdin())?.replace(/^\n+/, '').trimEnd();
  return piped ? `${parts.join('\n\n')}\n\n${fenced(piped)}` : parts.join('\n\n');
}

/**
 * Whether stdin is a shell pipe or a redirected file: data someone meant for keel. A socket (how a
 * program's child gets a pipe it may never close) or a character device (`/dev/null`) is not read when
 * the prompt came as words, so a caller that leaves its end open never makes keel wait.
 */
function stdinIsPipedData(): boolean {
  try {
    const st = fstatSync(0);
    return st.isFIFO() || st.isFile();
  } catch {
    return false;
  }
}

/** `text` in a Markdown code fence longer than any backtick run inside it, so it cannot close early. */
export function fenced(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}\n${text}\n${fence}`;
}

/**
 * All of stdin, trimmed (undefined when empty). Read as a stream to EOF: a synchronous read of fd 0
 * ends early (EAGAIN) when the writer is slow, as in `(sleep 1; echo hi) | keel`.
 */
export async function readStdin(): Promise<string | undefined> {
  return (await readAllStdin())?.trim() || undefined;
}

async function readAllStdin(): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of process.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  } catch {
    return undefined; // a closed or unreadable stdin gives no prompt
  }
  return Buffer.concat(chunks).toString('utf8');
}
