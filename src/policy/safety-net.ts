/**
 * The safety net: before a session's first write, keep the state it can be undone to (undo.ts goes back
 * to it). In a git repository that is a snapshot commit of the whole work tree under refs/keel/sessions/<id>;
 * elsewhere (and for ignored files or files outside the repository) a copy of each file before its first write.
 */
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import * as z from 'zod';
import {
  commitTree,
  createRefs,
  createStampedRef,
  git,
  gitTry,
  ignoredPaths,
  type RepoState,
  repoPath,
  repoState,
  stampedRefName,
} from './git.js';
import { openHeldSync } from './held-path.js';
import { ScopeError } from './scope.js';
import { DEFAULT_SNAPSHOT_LIMITS, type SnapshotLimits, snapshotTree } from './snapshot-tree.js';

export { commitSessionFiles, GitError } from './git.js';

const copiedFileSchema = z.object({
  path: z.string(),
  existed: z.boolean(),
  /** Where the copy is, relative to the record's dir (only for regular files). */
  copy: z.string().optional(),
  mode: z.number().optional(),
  /** The top folder the write had to create, removed on undo when empty. */
  created_dir: z.string().optional(),
});

/** A path the safety net did not save (absolute; a nested repository ends in `/`), and why: undo leaves it. */
const skippedSchema = z.object({ path: z.string(), reason: z.string() });

/** What the safety net saved; the loop logs it as a `safety_net` event, undo reads it back. */
export const safetyNetRecordSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('git'),
    repo: z.string(),
    ref: z.string(),
    commit: z.string(),
    head: z.string().nullable(),
    branch: z.string().nullable(),
    tag: z.string().nullable(),
    skipped: z.array(skippedSchema).optional(),
  }),
  z.object({
    kind: z.literal('copy'),
    dir: z.string(),
    files: z.array(copiedFileSchema),
    skipped: z.array(skippedSchema).optional(),
  }),
]);

export type SafetyNetRecord = z.infer<typeof safetyNetRecordSchema>;
export type GitRecord = Extract<SafetyNetRecord, { kind: 'git' }>;
export type CopiedFile = z.infer<typeof copiedFileSchema>;

export interface SafetyNetOptions {
  /** The session's workspace root (canonical). */
  root: string;
  sessionId: string;
  /** KEEL_HOME/undo: copies for files git cannot keep go in <undoDir>/<session-id>/. */
  undoDir: string;
  /** What a snapshot or a copy may take on (default: 64 MB a file, 256 MB in all). */
  limits?: SnapshotLimits;
  /**
   * A later run of a session snapshots again, under a ref of its own beside the session's (the chat's
   * /rewind goes back to the start of a turn with it); undo still returns to the session's first snapshot.
   */
  everyRun?: boolean;
}

/**
 * Keeps what a session's writes can be undone to. In git, the first call of any kind (shell included)
 * snapshots the whole work tree. Paths git cannot keep (no repository, outside it, or ignored) are copied
 * before their first write. A shell call outside git names no paths, so what it writes cannot be undone.
 */
export class SafetyNet {
  /** The repository (null outside git); undefined until the first call has found it and snapshotted. */
  private repo: string | null | undefined;
  /** Paths git keeps for this session: only a path's first write needs asking git whether it is ignored. */
  private readonly kept = new Set<string>();
  /** Files git tracked when a prepared snapshot was taken (repo-relative): kept by git, never ignored. */
  private tracked: Set<string> | undefined;
  private copied: CopiedFile[] | undefined;
  /** Bytes copied so far this session, against the total cap. */
  private copiedBytes = 0;

  constructor(private readonly opts: SafetyNetOptions) {}

  /** Call before every write or exec with the canonical paths it will write; returns the records to log (often none). */
  beforeWrite(paths: string[]): SafetyNetRecord[] {
    const records: SafetyNetRecord[] = [];
    if (this.repo === undefined) {
      // one git call finds the repository, HEAD, and whether this session was snapshotted before (a resume:
      // that first snapshot, already logged, is still the state to return to)
      const state = repoState(this.opts.root, sessionRef(this.opts.sessionId));
      if (state && !state.hasRef) records.push(takeSnapshot(state, this.opts.sessionId, this.limits()));
      else if (state && this.opts.everyRun)
        records.push(takeSnapshot(state, this.opts.sessionId, this.limits(), runSuffix()));
      this.repo = state?.repo ?? null;
    }
    const untracked = this.repo ? this.outsideGit(this.repo, paths) : paths;
    const copy = this.copyBeforeWrite(untracked);
    if (copy) records.push(copy);
    return records;
  }

  /**
   * Take over a snapshot prepared before the first write (prepareSafetyNet, in a worker while the model
   * answers): the first call then starts no git. Returns the record to log; nothing once the net has started.
   */
  adopt(prepared: PreparedNet): SafetyNetRecord[] {
    if (this.repo !== undefined) return [];
    this.repo = prepared.repo;
    if (prepared.tracked) this.tracked = new Set(prepared.tracked);
    return prepared.record ? [prepared.record] : [];
  }

  /** Whether the first call has happened (a prepared snapshot nobody adopted is dropped: dropPrepared). */
  get started(): boolean {
    return this.repo !== undefined;
  }

  private outsideGit(repo: string, paths: string[]): string[] {
    const tracked = this.tracked;
    const fresh = [...new Set(paths)].filter((p) => {
      if (this.kept.has(p) || this.saved().some((f) => f.path === p)) return false;
      const rel = tracked ? repoPath(repo, p) : undefined;
      if (rel !== undefined && tracked?.has(rel)) {
        this.kept.add(p);
        return false;
      }
      return true;
    });
    const inside = fresh.map((p) => repoPath(repo, p));
    const ignored = new Set(
      ignoredPaths(
        repo,
        inside.filter((p): p is string => p !== undefined),
      ),
    );
    return fresh.filter((p, i) => {
      const rel = inside[i];
      const copy = rel === undefined || ignored.has(rel);
      if (!copy) this.kept.add(p);
      return copy;
    });
  }

  private limits(): SnapshotLimits {
    return this.opts.limits ?? DEFAULT_SNAPSHOT_LIMITS;
  }

  private dir(): string {
    return join(this.opts.undoDir, this.opts.sessionId);
  }

  private saved(): CopiedFile[] {
    if (this.copied) return this.copied;
    const manifest = join(this.dir(), 'manifest.json');
    // a resumed session keeps its first copies: those hold the state before the session
    const parsed = existsSync(manifest)
      ? z.object({ files: z.array(copiedFileSchema) }).safeParse(JSON.parse(readFileSync(manifest, 'utf8')))
      : undefined;
    this.copied = parsed?.success ? parsed.data.files : [];
    return this.copied;
  }

  private copyBeforeWrite(paths: string[]): SafetyNetRecord | undefined {
    const saved = this.saved();
    const fresh = [...new Set(paths)].filter((p) => !saved.some((f) => f.path === p));
    if (!fresh.length) return undefined;
    const dir = this.dir();
    mkdirSync(join(dir, 'files'), { recursive: true });
    const skipped: Array<{ path: string; reason: string }> = [];
    const files = fresh.map((path) => {
      const entry = this.saveFile(path, dir, saved.length + 1, skipped);
      saved.push(entry);
      return entry;
    });
    const manifest = join(dir, 'manifest.json');
    writeFileSync(
      `${manifest}.tmp`,
      `${JSON.stringify({ session_id: this.opts.sessionId, files: saved }, null, 2)}\n`,
    );
    renameSync(`${manifest}.tmp`, manifest);
    return { kind: 'copy', dir, files, ...(skipped.length ? { skipped } : {}) };
  }

  private saveFile(path: string, dir: string, n: number, skipped: CopySkip[]): CopiedFile {
    // opened through held folders: a folder swapped for a symlink since the gate's check must not put an
    // outside file into the copy that undo would later restore here
    let held: ReturnType<typeof openHeldSync>;
    try {
      held = openHeldSync(path);
    } catch (err) {
      if (!(err instanceof ScopeError)) throw err;
      skipped.push({ path, reason: err.message });
      return { path, existed: true };
    }
    if (!held) return { path, existed: false, ...createdDir(path) };
    try {
      const st = held.stats;
      // folders and symlinks are not copied: the write tools write regular files at canonical paths
      if (!st.isFile()) return { path, existed: true };
      const { maxFileBytes, maxTotalBytes } = this.limits();
      // a huge (or sparse) file would stall the write; it is named instead, and undo leaves it alone
      const reason =
        st.size > maxFileBytes
          ? `larger than ${mb(maxFileBytes)}`
          : this.copiedBytes + st.size > maxTotalBytes
            ? `past the safety net's ${mb(maxTotalBytes)} total`
            : undefined;
      if (reason) {
        skipped.push({ path, reason });
        return { path, existed: true };
      }
      this.copiedBytes += st.size;
      const copy = join('files', `${String(n).padStart(5, '0')}-${basename(path)}`);
      writeFileSync(join(dir, copy), readFileSync(held.fd));
      return { path, existed: true, copy, mode: st.mode & 0o7777 };
    } finally {
      closeSync(held.fd);
    }
  }
}

type CopySkip = { path: string; reason: string };

function mb(bytes: number): string {
  return `${Math.round(bytes / (1024 * 1024))} MB`;
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

function createdDir(path: string): { created_dir?: string } {
  let top: string | undefined;
  for (let dir = dirname(path); !lstatOrUndefined(dir) && dirname(dir) !== dir; dir = dirname(dir)) top = dir;
  return top ? { created_dir: top } : {};
}

/** A first write's work done ahead of it: the repository, its snapshot (none on a resume), what git tracks. */
export interface PreparedNet {
  repo: string | null;
  record?: GitRecord;
  tracked?: string[];
}

/**
 * Everything the first write would do in git, done now: run in a worker thread as an acting session starts
 * (src/policy/prepare-net.ts), so the snapshot's git processes overlap the first model request instead of
 * holding up the write. The snapshot is then of the work tree as the session started; keel changes
 * nothing before its first write or command, so that is the state its writes are undone to.
 */
export function prepareSafetyNet(opts: {
  root: string;
  sessionId: string;
  limits?: SnapshotLimits;
  everyRun?: boolean;
}): PreparedNet {
  const state = repoState(opts.root, sessionRef(opts.sessionId));
  if (!state) return { repo: null };
  const limits = opts.limits ?? DEFAULT_SNAPSHOT_LIMITS;
  const record = !state.hasRef
    ? takeSnapshot(state, opts.sessionId, limits)
    : opts.everyRun
      ? takeSnapshot(state, opts.sessionId, limits, runSuffix())
      : undefined;
  // a tracked file is never ignored: its first write needs no check-ignore
  const tracked = git(state.repo, ['-c', 'core.fsmonitor=false', 'ls-files', '-z', '--cached'])
    .split('\0')
    .filter(Boolean);
  return { repo: state.repo, ...(record ? { record } : {}), tracked };
}

/** Drop a prepared snapshot that no write used (a session that changed nothing leaves no ref or tag). */
export function dropPrepared(prepared: PreparedNet): void {
  const record = prepared.record;
  if (!record) return;
  const lines = [`delete ${record.ref}\0${record.commit}\0`];
  if (record.tag && record.head) lines.push(`delete ${preRef(record.tag)}\0${record.head}\0`);
  gitTry(record.repo, ['update-ref', '-z', '--stdin'], { input: lines.join('') });
}

/**
 * Where HEAD was before a session is marked under keel's own refs, never among the user's tags (where
 * `git describe` would answer with it and `git push --tags` publish it).
 */
export const PRE_REFS = 'refs/keel/pre';

/** The full ref of a record's HEAD marker: new records hold it whole, older ones a `keel-pre/…` tag name. */
function preRef(tag: string): string {
  return tag.startsWith('refs/') ? tag : `refs/tags/${tag}`;
}

/** The `keel-pre/…` tags older keel left among the user's tags, as full ref names. */
export function legacyPreTags(repo: string): string[] {
  const out = gitTry(repo, ['for-each-ref', '--format=%(refname)', 'refs/tags/keel-pre/']) ?? '';
  return out.split('\n').filter(Boolean);
}

/** Move every `keel-pre/…` tag under refs/keel/pre/ in one transaction; returns how many moved. */
export function moveLegacyPreTags(repo: string): number {
  const tags = legacyPreTags(repo);
  if (!tags.length) return 0;
  const input = tags
    .map((ref) => {
      const sha = git(repo, ['rev-parse', '--verify', `${ref}^{}`]).trim();
      const moved = `${PRE_REFS}/${ref.slice('refs/tags/keel-pre/'.length)}`;
      return `create ${moved}\0${sha}\0delete ${ref}\0\0`;
    })
    .join('');
  git(repo, ['update-ref', '-m', 'keel: move keel-pre tags under refs/keel/pre', '--stdin', '-z'], { input });
  return tags.length;
}

/** A later run's snapshot ref: the session's, with the time it was taken. */
function runSuffix(): string {
  return `.run-${Date.now().toString(36)}`;
}

function sessionRef(sessionId: string, run = ''): string {
  return `refs/keel/sessions/${sessionId}${run}`;
}

/** The snapshot commit of the work tree, under the session's ref (and HEAD marked under refs/keel/pre/). */
function takeSnapshot(
  { repo, head, branch }: RepoState,
  sessionId: string,
  limits: SnapshotLimits,
  run = '',
): GitRecord {
  const ref = sessionRef(sessionId, run);
  const { tree, skipped } = snapshotTree(repo, head, limits);
  // the commit only keel's ref holds, so keel commits it: no need to look up the user's identity
  const message = `keel: work tree before session ${sessionId}`;
  const commit = commitTree(repo, tree, head, message, { committer: 'keel' });
  const record: GitRecord = {
    kind: 'git',
    repo,
    ref,
    commit,
    head,
    branch,
    tag: null,
    ...(skipped.length ? { skipped: skipped.map((s) => ({ ...s, path: join(repo, s.path) })) } : {}),
  };
  if (!head) {
    git(repo, ['update-ref', '-m', 'keel: snapshot', ref, commit, '']);
    return record;
  }
  // the session ref and the marker in one transaction; one at a time when that marker name is already taken
  const at = new Date();
  const marker = stampedRefName(PRE_REFS, at);
  if (createRefs(repo, { [ref]: commit, [marker]: head }, 'keel: snapshot'))
    return { ...record, tag: marker };
  git(repo, ['update-ref', '-m', 'keel: snapshot', ref, commit, '']);
  return { ...record, tag: createStampedRef(repo, PRE_REFS, head, at) };
}
