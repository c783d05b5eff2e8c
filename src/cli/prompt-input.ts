/** Where the task text comes from: arguments, -m, or stdin when it is piped. */

/** The prompt, or undefined when none was given anywhere. A piped stdin is read to its end. */
export async function readPrompt(words: string[], message: string | undefined): Promise<string | undefined> {
  const parts = [message, words.join(' ')].filter((p): p is string => Boolean(p?.trim()));
  if (parts.length) return parts.join('\n\n');
  if (process.stdin.isTTY) return undefined;
  return readStdin();
}

/**
 * All of stdin, trimmed (undefined when empty). Read as a stream to EOF: a synchronous read of fd 0
 * ends early (EAGAIN) when the writer is slow, as in `(sleep 1; echo hi) | keel`.
 */
export async function readStdin(): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of process.stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  } catch {
    return undefined; // a closed or unreadable stdin gives no prompt
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  return text || undefined;
}
