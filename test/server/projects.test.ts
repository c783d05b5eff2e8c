/** The names `keel serve --project` lists its projects by: the folder's own, made unique in the order given. */
import { describe, expect, it } from 'vitest';
import { projectNames } from '../../src/server/projects.js';

describe('projectNames', () => {
  it('names each project by its folder, and a second folder of the same name with -2 after it', () => {
    expect(projectNames(['/src/api', '/src/web'])).toEqual(['api', 'web']);
    expect(projectNames(['/a/app', '/b/app', '/c/app-2', '/d/app'])).toEqual([
      'app',
      'app-2',
      'app-2-2',
      'app-3',
    ]);
  });
});
