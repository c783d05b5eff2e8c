/** `keel audit verify|tail`: check the tamper-evident audit chain and read its newest lines. */
import { existsSync } from 'node:fs';
import { keelPaths } from '../config/paths.js';
import { type AuditLine, readAuditTail, verifyChain } from '../store/audit.js';
import { EXIT } from './exit-codes.js';
import { dim, red } from './render.js';

/** Verify the chain in an audit folder or one day file: 0 intact, 1 broken (naming the first bad line), 2 no such path. */
export async function auditVerify(path: string | undefined, flags: { json?: boolean }): Promise<number> {
  const target = path ?? keelPaths().auditDir;
  if (!existsSync(target)) {
    if (flags.json) writeJson({ ok: false, path: target, problem: 'no such file or folder' });
    process.stderr.write(`${red('keel:')} no audit log at ${target}\n`);
    return EXIT.usage;
  }
  const result = verifyChain(target);
  if (flags.json) {
    writeJson({ path: target, ...result });
    return result.ok ? EXIT.ok : EXIT.failed;
  }
  if (result.ok) {
    process.stdout.write(`audit chain intact: ${result.lines} lines\n`);
    return EXIT.ok;
  }
  process.stderr.write(
    `${red('keel:')} audit chain broken at ${result.file} line ${result.line}: ${result.problem}\n`,
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
      r.entry ? `${describe(r.entry)}\n` : `${red('invalid')} ${r.file}:${r.line} ${r.text}\n`,
    );
  }
  return EXIT.ok;
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
