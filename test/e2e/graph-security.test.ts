import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { git, gitRepo, tempDir } from '../helpers/tmp.js';
import { chatBodies, keel, keelHome, lastSessionEvents, model, modelFlags } from './harness.js';

const json = (text: string) => JSON.parse(text) as Record<string, unknown>;

describe('the code graph against a hostile repository', () => {
  it('a symlink to a file or folder outside the workspace is not indexed', async () => {
    const outside = tempDir('keel-outside-');
    writeFileSync(join(outside, 'secret.ts'), 'export function outsideSecret() {}\n');
    mkdirSync(join(outside, 'dir'));
    writeFileSync(join(outside, 'dir', 'more.ts'), 'export function outsideDir() {}\n');
    const repo = gitRepo({ 'src/ok.ts': 'export function inside() {}\n' });
    symlinkSync(join(outside, 'secret.ts'), join(repo, 'src/leak.ts'));
    symlinkSync(join(outside, 'dir'), join(repo, 'linked'));
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'links');
    const home = keelHome();
    const index = await keel(['graph', 'index', '--json'], { cwd: repo, home, timeoutMs: 60_000 });
    expect(json(index.stdout)).toMatchObject({ files: 1, symbols: 1 });
    for (const name of ['outsideSecret', 'outsideDir']) {
      const q = await keel(['graph', 'query', name, '--json'], { cwd: repo, home });
      expect(json(q.stdout).definitions).toEqual([]);
    }
    const outline = await keel(['graph', 'query', '--outline', 'src/leak.ts', '--json'], { cwd: repo, home });
    expect(outline.code).toBe(2);
    expect(json(outline.stdout).error).toContain('outside the workspace');
  }, 90_000);

  it("a tool's path argument ../x is refused by the scope, and nothing outside is read", async () => {
    const repo = gitRepo({ 'src/ok.ts': 'export function inside() {}\n' });
    const beside = join(repo, '..', `${repo.split('/').pop()}-x.ts`);
    writeFileSync(beside, 'export function besideTheRepo() {}\n');
    onTestFinished(() => rmSync(beside, { force: true }));
    const path = `../${beside.split('/').pop()}`;
    const home = keelHome();
    const server = await model([
      { tool_calls: [{ name: 'file_outline', arguments: { path } }] },
      { tool_calls: [{ name: 'importers', arguments: { path } }] },
      { text: 'done' },
    ]);
    const run = await keel(['ask', '-m', 'outline it', ...modelFlags(server), '--json'], {
      cwd: repo,
      home,
      timeoutMs: 60_000,
    });
    expect(json(run.stdout).code).toBe('COMPLETED');
    const results = lastSessionEvents(home).filter(
      (e) => e.type === 'tool_result' || e.type === 'gate_decision',
    );
    const outline = results.filter((e) => (e.data as { tool: string }).tool === 'file_outline');
    expect(outline.some((e) => JSON.stringify(e.data).includes('outside the workspace'))).toBe(true);
    expect(JSON.stringify(chatBodies(server))).not.toContain('besideTheRepo');
  }, 90_000);
});
