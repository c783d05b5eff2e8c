/** Stable test ids: `file > suite > test`, with paths made relative to the project root. */
import { isAbsolute, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestResult } from './types.js';

/** The separator between the parts of a test id. */
export const ID_SEPARATOR = ' > ';

// Messages are for a person or a small model; a stack trace past this adds nothing
const MAX_MESSAGE_CHARS = 4000;

/** Join id parts, dropping empty ones. */
export function joinId(parts: Array<string | undefined>): string {
  return parts.filter((part): part is string => part !== undefined && part !== '').join(ID_SEPARATOR);
}

/**
 * A report's file path as a root-relative POSIX path. Baseline and later runs may happen in different
 * checkouts, so absolute paths inside the root must not leak into ids.
 */
export function relativeFile(path: string, root?: string): string {
  let file = path.startsWith('file://') ? safeFileUrl(path) : path;
  if (root !== undefined && isAbsolute(file)) {
    const rel = relative(root, file);
    if (rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)) file = rel;
  }
  if (sep !== '/') file = file.split(sep).join('/');
  return file.startsWith('./') ? file.slice(2) : file;
}

function safeFileUrl(url: string): string {
  try {
    return fileURLToPath(url);
  } catch {
    return url;
  }
}

/** Cut a failure message to a size worth showing. */
export function clipMessage(message: string | undefined): string | undefined {
  if (message === undefined) return undefined;
  const trimmed = message.trim();
  if (trimmed === '') return undefined;
  if (trimmed.length <= MAX_MESSAGE_CHARS) return trimmed;
  return `${trimmed.slice(0, MAX_MESSAGE_CHARS)}… [message cut at ${MAX_MESSAGE_CHARS} chars]`;
}

/** Make ids unique in report order (`id [2]`, `id [3]`), so two same-named tests stay two results. */
export function dedupeIds(results: TestResult[]): TestResult[] {
  const seen = new Map<string, number>();
  return results.map((result) => {
    const count = (seen.get(result.id) ?? 0) + 1;
    seen.set(result.id, count);
    return count === 1 ? result : { ...result, id: `${result.id} [${count}]` };
  });
}

/** Remove ANSI colour and cursor codes, which runners emit even into pipes when forced. */
export function stripAnsi(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching escape sequences is the point
  return text.replace(/\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*\u0007/g, '');
}
