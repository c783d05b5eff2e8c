/** `keel memory add TEXT --tags a,b`: the form people coming from other memory tools type works like repeated --tag. */
import { describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import { keel, keelHome } from './harness.js';

describe('keel memory add tags', () => {
  it('--tags a,b, repeated --tag and a mix give the same tags', async () => {
    const repo = gitRepo();
    const home = keelHome();
    const tagsOf = async (args: string[]) => {
      const add = await keel(['memory', 'add', '--json', ...args], { cwd: repo, home });
      expect(add.code).toBe(0);
      const { id } = JSON.parse(add.stdout) as { id: string };
      const show = await keel(['memory', 'show', '--json', id], { cwd: repo, home });
      return (JSON.parse(show.stdout) as { item: { tags: string[] } }).item.tags;
    };
    expect(await tagsOf(['The cache is SQLite', '--tags', 'db,cache'])).toEqual(['cache', 'db']);
    expect(await tagsOf(['The queue is Postgres', '--tag', 'db', '--tag', 'queue'])).toEqual(['db', 'queue']);
    expect(await tagsOf(['Prices in cents', '--tags', 'money, ui', '--tag', 'db'])).toEqual([
      'db',
      'money',
      'ui',
    ]);
  });
});
