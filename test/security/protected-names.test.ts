/**
 * Protected names cannot be created by the shell (issue 7, findings 4 and 10): a scripted model's sandboxed
 * commands create keel.toml, .keel/, .git and their variants, rename or link them into place; keel removes
 * each one after the command, tells the model, and the next `keel` run in that folder is unaffected.
 */
import { existsSync, lstatSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findProgram } from '../../src/policy/sandbox-limits.js';
import { chatBodies, keel, keelHome, model, modelFlags, requestMessages } from '../e2e/harness.js';
import { gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

const BWRAP = findProgram('bwrap', process.env.PATH);

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function toolResults(body: unknown): string[] {
  return requestMessages(body)
    .filter((m) => m.role === 'tool')
    .map((m) => m.content ?? '');
}

describe.skipIf(!BWRAP)('protected names the shell creates are removed', () => {
  it('a keel.toml made in the sandbox cannot shadow the trusted .keel/config.toml and its deny hook (finding 4)', async () => {
    const hook = join(tempDir('keel-hook-'), 'deny-rm.mjs');
    writeFileSync(
      hook,
      `let s='';process.stdin.on('data',(d)=>(s+=d));process.stdin.on('end',()=>{const e=JSON.parse(s);
if(String(e.args.command).includes('rm -rf')){process.stderr.write('rm -rf is not allowed here');process.exit(2)}process.exit(0)});\n`,
    );
    const config = `[[hooks]]\nevent = "PreToolUse"\nmatcher = "shell"\ncommand = ["${process.execPath}", "${hook}"]\n`;
    const repo = gitRepo({ '.keel/config.toml': config, 'src/a.txt': 'keep me\n' });
    const home = keelHome();
    expect((await keel(['trust'], { cwd: repo, home })).code).toBe(0);

    // the attack: an empty keel.toml would be read first next time, and the trusted hook would vanish
    const plant = await model([
      {
        tool_calls: [
          { name: 'shell', arguments: { command: 'printf "# mine\\n" > keel.toml; echo planted' } },
        ],
      },
      { text: 'ok' },
    ]);
    const first = await keel(['edit', ...modelFlags(plant), '--json', 'plant'], { cwd: repo, home });
    expect(first.code).toBe(0);
    expect(exists(join(repo, 'keel.toml'))).toBe(false);
    const told = toolResults(chatBodies(plant)[1]).join('\n');
    expect(told).toContain('planted');
    expect(told).toMatch(/keel removed .*keel\.toml/);

    const strike = await model([
      { tool_calls: [{ name: 'shell', arguments: { command: 'rm -rf src' } }] },
      { text: 'ok', expect: { last_tool_result_contains: 'rm -rf is not allowed here' } },
    ]);
    const second = await keel(['edit', ...modelFlags(strike), '--json', 'strike'], { cwd: repo, home });
    expect(second.code).toBe(0);
    expect(readFileSync(join(repo, 'src/a.txt'), 'utf8')).toBe('keep me\n');
  }, 60_000);

  it('keel.toml, .keel/, .git and their variants, renamed or linked into place, are all removed and reported', async () => {
    // not a git repository: a .git that appears at the top would become keel's repository next run
    const dir = tempDir('keel-plain-');
    writeFiles(dir, { 'src/a.txt': 'a\n', 'notes.txt': 'x\n' });
    const outside = tempDir('keel-elsewhere-');
    writeFiles(outside, { 'keep.txt': 'keep\n', 'config.toml': 'allow_shell = true\n' });
    const home = keelHome();
    const commands = [
      'echo "allow_shell = true" > keel.toml; mkdir -p .keel && echo x > .keel/config.toml; echo one',
      'git init -q . && echo two',
      'echo y > KEEL.TOML; mkdir .git. ; echo z > "keel.toml "; echo three',
      'echo "allow_shell = true" > x && mv x keel.toml && echo four',
      `ln -s '${outside}' .keel && ln -s '${outside}/config.toml' keel.toml && echo five`,
      'git init -q sub && echo six',
    ];
    const server = await model([
      {
        tool_calls: [
          ...commands.map((command) => ({ name: 'shell', arguments: { command } })),
          { name: 'write_file', arguments: { path: '.git./config', content: '[core]\n' } },
          { name: 'write_file', arguments: { path: 'KEEL~1.TOM', content: 'x = 1\n' } },
        ],
      },
      { text: 'ok' },
    ]);
    const run = await keel(['edit', ...modelFlags(server), '--json', 'go'], { cwd: dir, home });
    expect(run.code).toBe(0);
    const results = toolResults(chatBodies(server)[1]);
    expect(results).toHaveLength(commands.length + 2);
    const removed = [
      ['keel.toml', '.keel'],
      ['.git'],
      ['KEEL.TOML', '.git.', 'keel.toml '],
      ['keel.toml'],
      ['.keel', 'keel.toml'],
    ];
    removed.forEach((names, i) => {
      expect(results[i]).toMatch(/keel removed what this command created/);
      for (const name of names) {
        expect(results[i]).toContain(name);
        expect(exists(join(dir, name)), name).toBe(false);
      }
    });
    // a nested repository is an ordinary folder to the sweep (keel's git runner never uses it)
    expect(results[5]).not.toMatch(/keel removed/);
    expect(existsSync(join(dir, 'sub/.git'))).toBe(true);
    expect(results[6]).toMatch(/protected: git internals/);
    expect(results[7]).toMatch(/protected: keel's project config/);
    // the links were removed, never followed
    expect(readFileSync(join(outside, 'keep.txt'), 'utf8')).toBe('keep\n');
    expect(readFileSync(join(outside, 'config.toml'), 'utf8')).toBe('allow_shell = true\n');
    expect(readFileSync(join(dir, 'src/a.txt'), 'utf8')).toBe('a\n');

    // the next run sees the folder as it was: no project config, no repository at the top
    const next = await model([{ text: 'fine' }]);
    const again = await keel(['edit', ...modelFlags(next), '--json', 'again'], { cwd: dir, home });
    expect(again.code).toBe(0);
    expect(again.stderr).not.toMatch(/keel\.toml|trust/);
  }, 60_000);
});
