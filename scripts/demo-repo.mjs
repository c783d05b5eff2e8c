/** The stats fixture as a committed git repository, for the screenshot and chat-capture scripts. */
import { execFileSync } from 'node:child_process';
import { cpSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const FIXTURE = fileURLToPath(new URL('../test/fixtures/fix/stats', import.meta.url));

/** Copy test/fixtures/fix/stats to `dest` and commit it on main as "demo"; git's HOME is `home`. */
export function demoRepo(dest, home) {
  cpSync(FIXTURE, dest, { recursive: true });
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    GIT_AUTHOR_NAME: 'demo',
    GIT_AUTHOR_EMAIL: 'demo@example.com',
    GIT_COMMITTER_NAME: 'demo',
    GIT_COMMITTER_EMAIL: 'demo@example.com',
  };
  for (const args of [
    ['init', '-q', '-b', 'main'],
    ['add', '-A'],
    ['commit', '-q', '-m', 'initial'],
  ])
    execFileSync('git', args, { cwd: dest, env });
}
