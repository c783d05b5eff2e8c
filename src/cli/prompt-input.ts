/** Where the task text comes from: arguments, -m, or stdin when it is piped. */
import { readFileSync } from 'node:fs';

/** The prompt, or undefined when none was given anywhere. */
export function readPrompt(words: string[], message: string | undefined): string | undefined {
  const parts = [message, words.join(' ')].filter((p): p is string => Boolean(p?.trim()));
  if (parts.length) return parts.join('\n\n');
  if (process.stdin.isTTY) return undefined;
  try {
    const piped = readFileSync(0, 'utf8').trim();
    return piped || undefined;
  } catch {
    return undefined;
  }
}
