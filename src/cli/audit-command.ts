/** `keel audit verify|tail`: check the tamper-evident audit chain and read its newest lines. */
import { existsSync } from 'node:fs';
import { keelPaths } from '../config/paths.js';
import { type AuditLine, readAuditTail, type VerifyResult, verifyChain } from '../store/audit.js';
import { checkSessions } from '../store/audit-sessions.js';
import { openDb } from '../store/db.js';
import { EventLog } from '../store/event-log.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { reportError } from './errors.js';
import { dim, red } from './render.js';

/**
 * Verify the chain in an audit folder or one day file against KEEL_HOME's audit key (or `--key`):
 * 0 intact (printing the head hash to anchor elsewhere), 1 broken or not proven (naming the first bad
 * line), 2 no such path.
 */
export async function auditVerify(
  path: string | undefined,
  flags: { json?: boolean; key?: string; expectHead?: string },
): Promise<number> {
  const paths = keelPaths();
  const target = path ?? paths.auditDir;
  if (!existsSync(target)) {
    return reportError(flags.json, 'CONFIG_ERROR', `no audit log at ${target}`, {
      ok: false,
      path: target,
      problem: 'no such file or folder',
    });
  }
  const chain = verifyChain(target, {
    keyPath: flags.key ?? paths.auditKey,
    ...(flags.expectHead !== undefined ? { expectHead: flags.expectHead.toLowerCase() } : {}),
  });
  // the chain vouches for the session log it summarizes: keel's own chain is checked against keel.db too
  const sessions =
    chain.ok && path === undefined && existsSync(paths.db) ? againstSessions(paths) : undefined;
  const result: VerifyResult = sessions?.problem
    ? {
        ok: false,
        file: paths.db,
        line: 1,
        problem: `session ${sessions.problem.session}: ${sessions.problem.problem}`,
      }
    : chain;
  const predating = sessions?.predating ?? 0;
  if (flags.json) {
    writeJson({ path: target, ...result, ...(predating ? { sessions_predating: predating } : {}) });
    return result.ok ? EXIT.ok : EXIT.failed;
  }
  if (result.ok) {
    const older = result.unsealed
      ? ` (the first ${result.unsealed} predate the audit key: proven unchanged only since line ${result.unsealed + 1} sealed them)`
      : '';
    process.stdout.write(`audit chain intact: ${result.lines} lines${older}\nhead ${result.head}\n`);
    if (predating)
      process.stdout.write(
        `${predating} session${predating === 1 ? '' : 's'} in keel.db began before this chain: not vouched for, and not resumed\n`,
      );
    return EXIT.ok;
  }
  if (sessions?.problem) {
    process.stderr.write(
      `${red('keel:')} the audit chain does not vouch for ${inertLine(paths.db)}: ${inertLine(result.problem)}\n`,
    );
    return EXIT.failed;
  }
  process.stderr.write(
    `${red('keel:')} audit chain broken at ${inertLine(result.file)} line ${result.line}: ${inertLine(result.problem)}\n`,
  );
  return EXIT.failed;
}

/** Print the newest lines of the audit chain (default 20), oldest first. */
export async function auditTail(flags: { n?: number; json?: boolean }): Promise<number> {
  const dir = keelPaths().auditDir;
  const rows = existsSync(dir) ? readAuditTail(dir, flags.n ?? 20) : [];
  if (flags.json) {
    writeJson({ lines: rows.map((r) => r.entry ?? { file: r.file, line: r.line, invalid: r.text }) });
    return EXIT.ok;
  }
  if (!rows.length) {
    process.stderr.write('no audit lines yet\n');
    return EXIT.ok;
  }
  for (const r of rows) {
    process.stdout.write(
      r.entry
        ? `${inertLine(describe(r.entry))}\n`
        : `${red('invalid')} ${r.file}:${r.line} ${inertLine(r.text)}\n`,
    );
  }
  return EXIT.ok;
}

/** keel.db's sessions against the chain (src/store/audit-sessions.ts). */
function againstSessions(paths: ReturnType<typeof keelPaths>): ReturnType<typeof checkSessions> {
  const db = openDb(paths.db);
  try {
    return checkSessions(paths.auditDir, new EventLog(db));
  } finally {
    db.close();
  }
}

function writeJson(doc: unknown): void {
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
}

/** One line a person can scan: seq, time, type, session, then the entry's own fields. */
function describe(line: AuditLine): string {
  const { seq, ts, type, session_id, prev: _prev, hash: _hash, ...fields } = line;
  const details = Object.entries(fields)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const session = typeof session_id === 'string' ? session_id : '-';
  return `${dim(`${String(seq).padStart(6)} ${ts}`)} ${type.padEnd(14)} ${session} ${details}`.trimEnd();
}
