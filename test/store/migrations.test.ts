/** The team store's migrations on both engines: several processes opening a fresh store at once, and a store newer than keel. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore, type StoreTarget } from '../../src/store/engine.js';
import { STORE_VERSION } from '../../src/store/migrations.js';
import { freshPgDatabase } from '../helpers/pg.js';
import { tempDir } from '../helpers/tmp.js';

const pgUrl = await freshPgDatabase();
const targets: Array<{ name: string; target: () => StoreTarget }> = [
  { name: 'sqlite', target: () => ({ engine: 'sqlite', path: join(tempDir('keel-mig-'), 'keel.db') }) },
  // without a PostgreSQL server this case is left out (KEEL_TEST_PG=require makes that an error)
  ...(pgUrl ? [{ name: 'postgres', target: (): StoreTarget => ({ engine: 'postgres', url: pgUrl }) }] : []),
];

describe.each(targets)('store migrations on $name', ({ target }) => {
  it('four openers of a fresh store at once migrate it once; a store newer than keel is refused', async () => {
    const where = target();
    const stores = await Promise.all([1, 2, 3, 4].map(() => openStore(where)));
    try {
      const rows = await stores[0]?.query<{ version: number }>('SELECT version FROM store_version');
      expect(rows).toEqual([{ version: STORE_VERSION }]);
      await stores[0]?.run('UPDATE store_version SET version = $1', [STORE_VERSION + 1]);
    } finally {
      for (const s of stores) await s.close();
    }
    await expect(openStore(where)).rejects.toThrow(
      `schema version ${STORE_VERSION + 1}, newer than this keel understands (${STORE_VERSION}); upgrade keel`,
    );
  });
});
