/**
 * What `/resume` with no id lists: this project's recent sessions (every project's with `--all`), each
 * one a person started with the sessions under it that it started (subagents, a run's attempts) or that
 * were forked from it, indented. Everything from the log is made inert here.
 */
import { basename } from 'node:path';
import type { EventLog, SessionRow } from '../store/event-log.js';
import { inertLine } from '../term/inert.js';
import { clip } from './describe.js';
import type { Style } from './style.js';

const DEPTH = 8;
/** Children shown under one session; the rest are counted. */
const CHILDREN = 10;

export function resumeList(
  log: EventLog,
  opts: { cwd: string; all: boolean; limit: number },
  style: Style,
): string[] {
  const rows = log.listTopLevel(opts.limit, opts.all ? {} : { cwd: opts.cwd });
  const listed = new Set(rows.map((r) => r.id));
  // a fork whose parent is listed goes under it, not on a line of its own
  const roots = rows.filter((r) => !r.parent_id || !listed.has(r.parent_id));
  if (!roots.length)
    return [
      opts.all
        ? 'no sessions yet'
        : `no sessions in this project yet ${style.dim('(/resume --all lists every project)')}`,
    ];
  const seen = new Set<string>();
  const out: string[] = [
    style.bold(opts.all ? 'recent sessions of every project' : "this project's recent sessions"),
    style.dim(
      opts.all
        ? '  /resume ID goes on with one'
        : '  /resume ID goes on with one; /resume --all lists every project',
    ),
  ];
  const line = (row: SessionRow, depth: number) => {
    const state = row.code ?? 'unfinished';
    const paint = row.code === 'COMPLETED' ? (s: string) => s : row.code ? style.red : style.yellow;
    const kind = row.forked_seq !== null && depth > 0 ? 'fork' : row.mode;
    const project = opts.all ? `${style.dim(inertLine(clip(basename(row.cwd), 20)))}  ` : '';
    const lead = depth === 0 ? '  ' : `${'  '.repeat(depth + 1)}↳ `;
    return `${lead}${row.id}  ${kind.padEnd(4)} ${paint(state.padEnd(16))} ${project}${inertLine(clip(row.prompt.split('\n')[0] ?? '', 60))}`;
  };
  const walk = (row: SessionRow, depth: number) => {
    if (seen.has(row.id)) return;
    seen.add(row.id);
    out.push(line(row, depth));
    if (depth >= DEPTH) return;
    const children = log.childSessions(row.id);
    for (const child of children.slice(0, CHILDREN)) walk(child, depth + 1);
    if (children.length > CHILDREN)
      out.push(style.dim(`${'  '.repeat(depth + 2)}… ${children.length - CHILDREN} more`));
  };
  for (const root of roots) walk(root, 0);
  return out;
}
