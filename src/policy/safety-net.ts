/**
 * The safety net: before a session's first write, keep the state it can be undone to, and undo back to it.
 * In a git repository that is a snapshot commit of the whole work tree under refs/keel/sessions/<id>;
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
import { basename, dirname, join, parse, relative } from 'node:path';
import { z } from 'zod';
import {
  changedPaths,
  checkoutPaths,
  commitsSince,
  commitTree,
  createRefs,
  createStampedRef,
  currentBranch,
  diffTrees,
  git,
  gitTry,
  headCommit,
  ignoredPaths,
  KEEL_IDENT,
  type RepoState,
  repoPath,
  repoState,
  resetIndexPaths,
  stampedRefName,
} from './git.js';
import { openHeldSync } from './held-path.js';
import { isInside, ScopeError } from './scope.js';
import { DEFAULT_SNAPSHOT_LIMITS, type SnapshotLimits, snapshotTree } from './snapshot-tree.js';
import { checkParents, LinkedPath, type ParentCache, removeNoFollow, restoreNoFollow } from './undo-paths.js';

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
type GitRecord = Extract<SafetyNetRecord, { kind: 'git' }>;
type CopiedFile = z.infer<typeof copiedFileSchema>;

/** Undo will not guess: it refuses when it cannot restore the pre-session state safely. */
export class UndoRefused extends Error {
  override name = 'UndoRefused';
}

export interface SafetyNetOptions {
  /** The session's workspace root (canonical). */
  root: string;
  sessionId: string;
  /** KEEL_HOME/undo: copies for files git cannot keep go in <undoDir>/<session-id>/. */
  undoDir: string;
  /** What a snapshot or a copy may take on (default: 64 MB a file, 256 MB in all). */
  limits?: SnapshotLimits;
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
}): PreparedNet {
  const state = repoState(opts.root, sessionRef(opts.sessionId));
  if (!state) return { repo: null };
  const record = state.hasRef
    ? undefined
    : takeSnapshot(state, opts.sessionId, opts.limits ?? DEFAULT_SNAPSHOT_LIMITS);
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

function sessionRef(sessionId: string): string {
  return `refs/keel/sessions/${sessionId}`;
}

/** The snapshot commit of the work tree, under the session's ref (and HEAD marked under refs/keel/pre/). */
function takeSnapshot(
  { repo, head, branch }: RepoState,
  sessionId: string,
  limits: SnapshotLimits,
): GitRecord {
  const ref = sessionRef(sessionId);
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

/** One thing undo will do. `root` is the folder the path must stay inside, with no link on the way. */
export type UndoStep =
  | {
      op: 'reset-branch';
      repo: string;
      branch: string | null;
      from: string;
      to: string | null;
      commits: number;
      paths: string[];
    }
  | {
      op: 'remove';
      path: string;
      /** Folders the removal leaves empty are removed up to this one (exclusive). */
      stop: string;
      root: string;
    }
  | { op: 'restore-git'; path: string; repo: string; commit: string; gitPath: string }
  | { op: 'restore-copy'; path: string; copy: string; mode: number; root: string }
  /** A path the safety net could not save: undo says so and leaves it as it is. */
  | { op: 'leave'; path: string; reason: string };

/** What undo will do, in order, and where it keeps the session's work first. */
export interface UndoPlan {
  root: string;
  steps: UndoStep[];
  /** The session's work, kept under refs/keel/undone/<id> before anything is changed. */
  keep: Array<{ repo: string; ref: string; tree: string; parent: string | null }>;
}

/** Work out how to return to the state before the session; throws UndoRefused when that is not safe. */
export function planUndo(records: SafetyNetRecord[], root: string): UndoPlan {
  const plan: UndoPlan = { root, steps: [], keep: [] };
  const leave: UndoStep[] = [];
  const repos = new Set<string>();
  for (const record of records) {
    if (record.kind !== 'git' || repos.has(record.repo)) continue;
    // the first snapshot of a repository is the state before the session
    repos.add(record.repo);
    planGit(record, plan);
    for (const s of record.skipped ?? []) {
      if (!s.path.endsWith('/')) leave.push({ op: 'leave', path: s.path, reason: s.reason });
    }
  }
  const seen = new Set(plan.steps.flatMap((s) => (s.op === 'reset-branch' ? [] : [s.path])));
  for (const record of records) {
    if (record.kind !== 'copy') continue;
    const skipped = new Map((record.skipped ?? []).map((s) => [s.path, s.reason]));
    for (const file of record.files) {
      if (seen.has(file.path)) continue;
      seen.add(file.path);
      const reason = skipped.get(file.path);
      const step = reason
        ? { op: 'leave' as const, path: file.path, reason }
        : planCopy(record.dir, file, root);
      if (step?.op === 'leave') leave.push(step);
      else if (step) plan.steps.push(step);
    }
  }
  // a path that now leads elsewhere (a folder above it swapped for a link) stops the whole undo
  const parents: ParentCache = new Map();
  for (const step of plan.steps) {
    if (step.op === 'remove' || step.op === 'restore-copy')
      refuseLinked(() => checkParents(step.path, step.root, parents));
    if (step.op === 'restore-git') refuseLinked(() => checkParents(step.path, step.repo, parents));
  }
  // what was never saved is named, beside the steps that undo the rest
  if (plan.steps.length) plan.steps.push(...leave);
  return plan;
}

function refuseLinked<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof LinkedPath)
      throw new UndoRefused(`undo refused: ${err.message}; nothing there was touched`);
    throw err;
  }
}

function planGit(record: GitRecord, plan: UndoPlan): void {
  const { repo } = record;
  if (!existsSync(repo)) throw new UndoRefused(`the repository ${repo} is gone`);
  if (gitTry(repo, ['cat-file', '-e', `${record.commit}^{commit}`]) === undefined) {
    throw new UndoRefused(
      `the snapshot ${record.commit.slice(0, 12)} is no longer in ${repo} (was ${record.ref} deleted?)`,
    );
  }
  const before = plan.steps.length;
  const now = headCommit(repo);
  if (now !== record.head) plan.steps.push(planReset(record, now));
  const current = snapshotTree(repo, now);
  // what the snapshot could not save is left as it is now: neither restored (to what?) nor removed
  const unsaved = (record.skipped ?? []).map((s) => repoPath(repo, s.path) ?? s.path);
  const isUnsaved = (p: string) => unsaved.some((u) => p === u || p.startsWith(`${u}/`));
  const changed = new Set<string>();
  for (const change of diffTrees(repo, `${record.commit}^{tree}`, current.tree)) {
    // nested repositories (gitlinks) are the user's to manage; undo never deletes or rewrites one
    if (change.oldMode === '160000' || change.newMode === '160000') continue;
    if (isUnsaved(change.path)) continue;
    changed.add(change.path);
    const path = join(repo, change.path);
    if (change.status === 'A') plan.steps.push({ op: 'remove', path, stop: repo, root: repo });
    else plan.steps.push({ op: 'restore-git', path, repo, commit: record.commit, gitPath: change.path });
  }
  // too big (or special) to hash now, and not there before: the session made it; a nested repository stays
  for (const s of current.skipped) {
    if (s.path.endsWith('/') || isUnsaved(s.path) || changed.has(s.path)) continue;
    if (lstatOrUndefined(join(repo, s.path))) {
      plan.steps.push({ op: 'remove', path: join(repo, s.path), stop: repo, root: repo });
    }
  }
  if (plan.steps.length === before) return;
  const ref = record.ref.replace('refs/keel/sessions/', 'refs/keel/undone/');
  plan.keep.push({ repo, ref, tree: current.tree, parent: now });
}

function planReset(record: GitRecord, now: string | null): UndoStep {
  const { repo } = record;
  const where = `HEAD in ${repo}`;
  if (!now) throw new UndoRefused(`${where} no longer points at a commit; undo cannot tell what happened`);
  const branch = currentBranch(repo);
  if (branch !== record.branch) {
    throw new UndoRefused(
      `${where} moved from ${record.branch ?? 'a detached HEAD'} to ${branch ?? 'a detached HEAD'}; switch back first`,
    );
  }
  if (record.head && gitTry(repo, ['merge-base', '--is-ancestor', record.head, now]) === undefined) {
    throw new UndoRefused(
      `${where} moved to ${now.slice(0, 12)}, which no longer contains ${record.head.slice(0, 12)}`,
    );
  }
  const commits = commitsSince(repo, record.head, now);
  // keel's own commits: authored by keel (older --commit), or naming this very session in their trailer
  const session = record.ref.replace('refs/keel/sessions/', '');
  const foreign = commits.filter(
    (c) => (c.name !== KEEL_IDENT.name || c.email !== KEEL_IDENT.email) && c.session !== session,
  );
  if (foreign.length) {
    const list = foreign.slice(0, 5).map((c) => `${c.sha.slice(0, 12)} ${c.name}: ${c.subject}`);
    throw new UndoRefused(
      `${where} moved past commits that are not keel's; undo will not rewrite them:\n  ${list.join('\n  ')}`,
    );
  }
  const paths = changedPaths(repo, record.head, now);
  return { op: 'reset-branch', repo, branch, from: now, to: record.head, commits: commits.length, paths };
}

function planCopy(dir: string, file: CopiedFile, root: string): UndoStep | undefined {
  // a file outside the workspace (a wider scope) still may not be reached through a link
  const within = isInside(file.path, root) ? root : parse(file.path).root;
  refuseLinked(() => checkParents(file.path, within));
  const now = lstatOrUndefined(file.path);
  if (!file.existed) {
    return now
      ? { op: 'remove', path: file.path, stop: dirname(file.created_dir ?? dirname(file.path)), root: within }
      : undefined;
  }
  if (!file.copy) return undefined;
  const copy = join(dir, file.copy);
  if (!existsSync(copy)) throw new UndoRefused(`the saved copy of ${file.path} is missing (${copy})`);
  const mode = file.mode ?? 0o644;
  const same =
    now?.isFile() && (now.mode & 0o7777) === mode && readFileSync(copy).equals(readFileSync(file.path));
  return same ? undefined : { op: 'restore-copy', path: file.path, copy, mode, root: within };
}

/** One line for people: `remove src/new.ts`, `restore src/a.ts`, `reset branch main to abc1234`. */
export function describeStep(step: UndoStep, root: string): string {
  const shown = (p: string) => (isInside(p, root) ? relative(root, p) || '.' : p);
  if (step.op === 'remove') return `remove ${shown(step.path)}`;
  if (step.op === 'leave') return `leave ${shown(step.path)} as it is (not saved: ${step.reason})`;
  if (step.op !== 'reset-branch') return `restore ${shown(step.path)}`;
  const branch = step.branch ? `branch ${step.branch.replace(/^refs\/heads\//, '')}` : 'HEAD';
  const undone = `${step.commits} keel commit${step.commits === 1 ? '' : 's'}`;
  return step.to
    ? `reset ${branch} to ${step.to.slice(0, 12)} (drops ${undone})`
    : `delete ${branch} (drops ${undone})`;
}

/** Carry out a plan; returns what was done, in order. Throws on the first step that fails. */
export function applyUndo(plan: UndoPlan): string[] {
  return refuseLinked(() => apply(plan));
}

function apply(plan: UndoPlan): string[] {
  const done: string[] = [];
  for (const keep of plan.keep) {
    // the session's work stays reachable, so an undo can itself be undone
    const commit = commitTree(keep.repo, keep.tree, keep.parent, 'keel: work tree before undo', {
      committer: 'keel',
    });
    git(keep.repo, ['update-ref', '-m', 'keel: undo', keep.ref, commit]);
  }
  const restores = new Map<string, { repo: string; commit: string; paths: string[] }>();
  for (const step of plan.steps) {
    if (step.op === 'reset-branch') resetBranch(step);
    else if (step.op === 'remove') removeNoFollow(step.path, step.stop, step.root);
    else if (step.op === 'restore-copy') restoreNoFollow(step.path, step.copy, step.mode, step.root);
    else if (step.op === 'restore-git') {
      const key = `${step.repo}\0${step.commit}`;
      const batch = restores.get(key) ?? { repo: step.repo, commit: step.commit, paths: [] };
      batch.paths.push(step.gitPath);
      restores.set(key, batch);
    }
    if (step.op !== 'restore-git') done.push(describeStep(step, plan.root));
  }
  for (const batch of restores.values()) {
    // checked again just before git writes: checkout-index replaces a linked folder rather than follow it,
    // but undo names such a path instead of silently turning a link into a folder
    const parents: ParentCache = new Map();
    for (const p of batch.paths) checkParents(join(batch.repo, p), batch.repo, parents);
    checkoutPaths(batch.repo, `${batch.commit}^{tree}`, batch.paths);
  }
  for (const step of plan.steps) if (step.op === 'restore-git') done.push(describeStep(step, plan.root));
  return done;
}

function resetBranch(step: Extract<UndoStep, { op: 'reset-branch' }>): void {
  if (step.to) {
    // --soft moves only the branch; the files are put back by the steps after this one
    git(step.repo, ['reset', '-q', '--soft', step.to]);
  } else if (step.branch) {
    git(step.repo, ['update-ref', '-m', 'keel: undo', '-d', step.branch, step.from]);
  }
  // the index entries keel's commits set go back to the old HEAD's; the user's other entries stay
  resetIndexPaths(step.repo, step.to, step.paths);
}
