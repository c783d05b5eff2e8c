/**
 * The prompt history of one project, kept across chats: KEEL_HOME/chat-history/<hash>.json, keyed by
 * the canonical workspace path, so a link to the project and the project itself share one history.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keelPaths } from '../config/paths.js';

const KEEP = 500;

export class InputHistory {
  private readonly file: string;
  private entries: string[];

  constructor(workspace: string, env: NodeJS.ProcessEnv = process.env) {
    const key = createHash('sha256').update(workspace).digest('hex').slice(0, 20);
    this.file = join(keelPaths(env).stateDir, 'chat-history', `${key}.json`);
    this.entries = read(this.file);
  }

  /** Oldest first. */
  all(): readonly string[] {
    return this.entries;
  }

  /** Remember a submitted prompt (not twice in a row); saved at once, so a crash loses nothing. */
  add(text: string): void {
    if (!text.trim() || this.entries.at(-1) === text) return;
    this.entries = [...this.entries, text].slice(-KEEP);
    try {
      mkdirSync(join(this.file, '..'), { recursive: true });
      const tmp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify({ workspace_history: this.entries }), { mode: 0o600 });
      renameSync(tmp, this.file);
    } catch {
      // a history that cannot be saved (read-only home) must not break the chat
    }
  }
}

function read(file: string): string[] {
  try {
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { workspace_history?: unknown };
    const list = doc.workspace_history;
    return Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string').slice(-KEEP) : [];
  } catch {
    return [];
  }
}
