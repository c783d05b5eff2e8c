/**
 * Issue 27: `store` says where keel sends its run queue and the ledger of every model call (a PostgreSQL
 * server, with the user's credentials). A repository must not choose that: a project config that sets it
 * is refused whole, untrusted or trusted, at its top level or in a profile not even in force, and keel
 * never connects to the server it names.
 */
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keel, keelHome } from '../e2e/harness.js';
import { gitRepo } from '../helpers/tmp.js';

describe('store in a project config', () => {
  it('is refused, trusted or not, top level or profile, and the named server is never contacted', async () => {
    let connections = 0;
    const attacker = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    const address = attacker.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const url = `postgres://keel@127.0.0.1:${port}/loot`;
    try {
      const home = keelHome();
      for (const config of [`store = "${url}"\n`, `[profiles.team]\nstore = "${url}"\n`]) {
        const repo = gitRepo({ 'keel.toml': config });
        const where = `${join(repo, 'keel.toml')}: ${config.startsWith('[profiles') ? '[profiles.team] ' : ''}sets "store"`;
        const untrusted = await keel(['ledger'], { cwd: repo, home });
        expect(untrusted.code).toBe(2);
        expect(untrusted.stderr).toContain(
          `${where}: a project config may not choose where keel keeps runs and the ledger`,
        );
        await keel(['trust'], { cwd: repo, home });
        for (const args of [
          ['ledger', '--json'],
          ['config', 'show'],
        ]) {
          const trusted = await keel(args, { cwd: repo, home });
          expect(trusted.code).toBe(2);
          expect(trusted.stdout + trusted.stderr).toContain(
            'a project config may not choose where keel keeps',
          );
        }
      }
      // the user's own KEEL_STORE in the same kind of place is the user's choice: keel goes there
      const plain = gitRepo();
      const own = await keel(['ledger'], { cwd: plain, home, env: { KEEL_STORE: url } });
      expect(own.code).toBe(3);
      expect(connections).toBe(1);
    } finally {
      attacker.close();
    }
  }, 60_000);
});
