/** `keel demo`: the real fix pipeline, offline, on a small buggy project bundled with keel and a scripted model. */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { packageRoot } from '../config/package-root.js';
import { git, initRepo, KEEL_IDENT } from '../policy/git.js';
import { exitCodeFor } from '../term/exit-codes.js';
import { inert, inertLine } from '../term/inert.js';
import { ConfigError, load } from '../term/options.js';
import { fixDocument } from './fix-command.js';
import { dim, red, renderEvent } from './render.js';

const DEMO = join(packageRoot(), 'fixtures', 'demo');

/**
 * Copy the demo project to a temporary git repository, fix it, and show the verdict, branch, diff and
 * rationale. The copy is removed when the demo ends, unless `--keep` asks for it.
 */
export async function runDemo(flags: { json?: boolean; keep?: boolean }): Promise<number> {
  const dir = join(mkdtempSync(join(tmpdir(), 'keel-demo-')), 'cart');
  const made: string[] = [dirname(dir)];
  try {
    return await demoIn(dir, flags, made);
  } finally {
    // an unverified attempt's worktree (under KEEL_HOME) belongs to the demo copy: it goes with it
    if (!flags.keep) for (const path of made) rmSync(path, { recursive: true, force: true });
  }
}

async function demoIn(
  dir: string,
  flags: { json?: boolean; keep?: boolean },
  made: string[],
): Promise<number> {
  cpSync(DEMO, dir, { recursive: true, filter: (src) => !src.endsWith('script.json') });
  const identity = ['-c', `user.name=${KEEL_IDENT.name}`, '-c', `user.email=${KEEL_IDENT.email}`];
  initRepo(dir, ['-b', 'main']);
  git(dir, ['add', '-A']);
  git(dir, [...identity, 'commit', '-q', '-m', 'A small cart with a discount bug']);
  const issue = readFileSync(join(dir, 'ISSUE.md'), 'utf8').trim();
  const say = (s: string) => {
    if (!flags.json) process.stderr.write(s);
  };
  say(`keel demo: a copy of a small project with a bug is in ${dir}\n`);
  say(
    dim('keel demo: the model is scripted (offline); the snapshot, sandbox, tests and verifier are real\n\n'),
  );

  let loaded: ReturnType<typeof load>['loaded'];
  try {
    loaded = load({ cwd: dir, provider: 'scripted', script: join(DEMO, 'script.json') }).loaded;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${red('keel demo:')} ${err.message}\n`);
    return exitCodeFor('CONFIG_ERROR');
  }
  const { runFix } = await import('../fix/run.js');
  const result = await runFix({
    repo: dir,
    issue,
    targetTests: [],
    maxAttempts: 2,
    loaded,
    signal: new AbortController().signal,
    ...(flags.json
      ? {}
      : {
          onProgress: (m: string) => process.stderr.write(`${dim('keel fix:')} ${inertLine(m)}\n`),
          onEvent: renderEvent,
        }),
  });
  if (result.worktree) made.push(result.worktree);
  const exit = exitCodeFor(result.code);
  if (flags.json) {
    const doc = {
      ...fixDocument(result, exit),
      demo_repo: flags.keep ? dir : null,
      kept: flags.keep === true,
    };
    process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    return exit;
  }
  const verdict = result.status === 'verified' ? 'VERIFIED' : `NOT VERIFIED (${result.code})`;
  process.stdout.write(`\n${verdict}: ${inertLine(result.summary)}\n\n`);
  if (result.branch)
    process.stdout.write(
      `branch:    ${result.branch}${result.commit ? ` @ ${result.commit.slice(0, 12)}` : ''}\n`,
    );
  if (flags.keep)
    process.stdout.write(`repo:      ${dir}  (try: git -C ${dir} log --oneline ${result.branch ?? ''})\n`);
  if (result.paths) {
    process.stdout.write(`rationale: ${result.paths.rationale}\npr:        ${result.paths.pr}\n\n`);
    process.stdout.write(inert(readFileSync(result.paths.diff, 'utf8')));
  }
  if (!flags.keep)
    process.stderr.write(dim(`\nkeel demo: removed the demo copy ${dir} (keep it with keel demo --keep)\n`));
  return exit;
}
