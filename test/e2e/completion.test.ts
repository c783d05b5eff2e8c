/** `keel completion bash|zsh|fish`: scripts generated from the command definitions, driven the way each shell does. */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import { KEEL_BIN, keel, keelHome, model, modelFlags } from './harness.js';

/** Which of a shell's programs is on PATH, if any. */
function which(shell: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${shell}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

/** A skipped test says why in its name. */
const skipNote = (shell: string) => (which(shell) ? '' : ` (skipped: ${shell} is not installed here)`);

/** What bash completes for `words` (the last one being completed), with the generated script sourced. */
function bashComplete(
  script: string,
  words: string[],
  opts: { cwd?: string; env?: Record<string, string | undefined> } = {},
): string[] {
  const file = join(tempDir('keel-bash-'), 'keel.bash');
  writeFileSync(file, script);
  const quoted = words.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ');
  const out = execFileSync(
    'bash',
    [
      '--norc',
      '--noprofile',
      '-c',
      `source "$1"; complete -p keel; COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _keel; printf '%s\\n' "\${COMPREPLY[@]}"`,
      'bash',
      file,
    ],
    {
      encoding: 'utf8',
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
      ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
    },
  );
  const [registration, ...replies] = out.trimEnd().split('\n');
  expect(registration).toBe('complete -o default -F _keel keel');
  return replies.filter(Boolean);
}

describe('keel completion bash', () => {
  it('completes verbs, subverbs, flags and choice lists from the real command tree', async () => {
    const home = keelHome();
    const run = await keel(['completion', 'bash'], { cwd: home, home });
    expect(run.code).toBe(0);
    const script = run.stdout;
    expect(bashComplete(script, ['keel', 'se'])).toEqual(['sessions', 'serve']);
    expect(bashComplete(script, ['keel', 'sessions', ''])).toEqual([
      'list',
      'show',
      'export',
      'resume',
      'compact',
      'fork',
    ]);
    // a flag's value is skipped when finding the verb: -C takes one
    expect(bashComplete(script, ['keel', 'sessions', 'list', '--pro'])).toEqual(['--project']);
    expect(bashComplete(script, ['keel', 'ask', '--provider', ''])).toEqual(['openai', 'ollama', 'scripted']);
    expect(bashComplete(script, ['keel', 'init', '--provider', 'ol'])).toEqual(['ollama']);
    expect(bashComplete(script, ['keel', 'completion', ''])).toEqual(['bash', 'zsh', 'fish']);
    expect(bashComplete(script, ['keel', 'trust', ''])).toEqual(['diff', 'check']);
    // `trust check` has --base; the top-level `check` verb does not
    expect(bashComplete(script, ['keel', 'trust', 'check', '--b'])).toEqual(['--base']);
    expect(bashComplete(script, ['keel', 'check', '--b'])).toEqual([]);
    expect(bashComplete(script, ['keel', 'edit', '--max-r'])).toEqual(['--max-rounds']);
  });

  it("completes --mode's choices, and looks up session ids and profile names as you type", async () => {
    const home = keelHome('[profiles.fast]\nmodel = "small"\n[profiles.deep]\nmodel = "big"\n');
    const repo = gitRepo();
    const server = await model([{ text: 'one' }, { text: 'two' }]);
    for (const q of ['first', 'second'])
      expect((await keel(['ask', ...modelFlags(server), q], { cwd: repo, home })).code).toBe(0);
    const ids = (
      JSON.parse((await keel(['sessions', 'list', '--json'], { cwd: repo, home })).stdout).sessions as Array<{
        id: string;
      }>
    ).map((s) => s.id);
    const script = (await keel(['completion', 'bash'], { cwd: home, home })).stdout;
    // the script asks `keel` on PATH, as an installed one does
    const bin = tempDir('keel-bin-');
    writeFileSync(join(bin, 'keel'), `#!/bin/sh\nexec "${process.execPath}" "${KEEL_BIN}" "$@"\n`, {
      mode: 0o755,
    });
    const env = { PATH: `${bin}:${process.env.PATH}`, KEEL_HOME: home, HOME: home };
    const at = (words: string[]) => bashComplete(script, words, { cwd: repo, env });
    expect(at(['keel', 'chat', '--mode', ''])).toEqual(['ask', 'plan', 'edit', 'auto']);
    expect(at(['keel', 'ask', '--profile', ''])).toEqual(['fast', 'deep']);
    expect(at(['keel', 'sessions', 'show', '']).sort()).toEqual([...ids].sort());
    expect(at(['keel', 'ask', '--resume', ids[0]?.slice(0, 17) ?? ''])).toContain(ids[0]);
    // a mode keel does not have is refused by the parser, with the choices named
    const bad = await keel(['chat', '--mode', 'yolo'], { cwd: repo, home });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/ask, plan, edit, auto/);
  });

  it('completes folders for -C and files for --script', async () => {
    const home = keelHome();
    const dir = tempDir('keel-comp-');
    execFileSync('mkdir', [join(dir, 'subdir')]);
    writeFileSync(join(dir, 'script.json'), '{}');
    const { stdout: script } = await keel(['completion', 'bash'], { cwd: home, home });
    expect(bashComplete(script, ['keel', 'ask', '-C', `${dir}/`]).sort()).toEqual([join(dir, 'subdir')]);
    expect(bashComplete(script, ['keel', 'ask', '--script', `${dir}/s`]).sort()).toEqual([
      join(dir, 'script.json'),
      join(dir, 'subdir'),
    ]);
  });

  it('--install writes each script where its shell looks and prints the path', async () => {
    const home = keelHome();
    const bash = await keel(['completion', 'bash', '--install'], { cwd: home, home });
    const bashPath = join(home, '.local', 'share', 'bash-completion', 'completions', 'keel');
    expect(bash.code).toBe(0);
    expect(bash.stdout).toBe(`${bashPath}\n`);
    expect(readFileSync(bashPath, 'utf8')).toContain('complete -o default -F _keel keel');
    const zsh = await keel(['completion', 'zsh', '--install'], { cwd: home, home });
    expect(zsh.stdout).toBe(`${join(home, '.zfunc', '_keel')}\n`);
    expect(zsh.stderr).toContain('fpath+=~/.zfunc; autoload -Uz compinit && compinit');
    expect(readFileSync(join(home, '.zfunc', '_keel'), 'utf8').startsWith('#compdef keel\n')).toBe(true);
    const fish = await keel(['completion', 'fish', '--install'], { cwd: home, home });
    const fishPath = join(home, '.config', 'fish', 'completions', 'keel.fish');
    expect(fish.stdout).toBe(`${fishPath}\n`);
    expect(existsSync(fishPath)).toBe(true);
  });

  it('an unknown shell is a usage error', async () => {
    const home = keelHome();
    const run = await keel(['completion', 'tcsh'], { cwd: home, home });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('bash, zsh, fish');
  });
});

describe('keel completion zsh and fish', () => {
  it('zsh: the script names the same verbs and subverbs', async () => {
    const home = keelHome();
    const { stdout } = await keel(['completion', 'zsh'], { cwd: home, home });
    expect(stdout).toContain('"sessions") echo "list show export resume compact fork" ;;');
    expect(stdout).toContain("'sessions:read recorded sessions'");
  });

  it.skipIf(!which('zsh'))(`zsh -n parses the script${skipNote('zsh')}`, async () => {
    const home = keelHome();
    const { stdout } = await keel(['completion', 'zsh'], { cwd: home, home });
    const file = join(tempDir('keel-zsh-'), '_keel');
    writeFileSync(file, stdout);
    expect(spawnSync('zsh', ['-n', file], { encoding: 'utf8' }).status).toBe(0);
  });

  it.skipIf(!which('zsh'))(`zsh completes verbs, subverbs and choices${skipNote('zsh')}`, async () => {
    const home = keelHome();
    await keel(['completion', 'zsh', '--install'], { cwd: home, home });
    writeFileSync(
      join(home, '.zshrc'),
      "fpath=(~/.zfunc $fpath)\nautoload -Uz compinit && compinit -u\nPS1='%% '\n",
    );
    // an interactive zsh on a pseudo-terminal (zsh/zpty): type the line and TAB, read until `expect` shows
    const driver = join(home, 'drive.zsh');
    writeFileSync(
      driver,
      [
        'zmodload zsh/zpty',
        `zpty -b z 'HOME=${home} ZDOTDIR=${home} TERM=dumb zsh -i'`,
        'zpty -w -n z "$1"$\'\\t\'',
        "local out='' chunk; integer i",
        'for ((i = 0; i < 100; i++)); do',
        '  while zpty -r -t z chunk; do out+=$chunk; done',
        '  [[ $out == *"$2"* ]] && break',
        '  sleep 0.1',
        'done',
        'print -r -- "$out"',
        'zpty -d z',
      ].join('\n'),
    );
    const complete = (line: string, expect: string) =>
      spawnSync('zsh', ['-f', driver, line, expect], { encoding: 'utf8', timeout: 20_000 }).stdout;
    expect(complete('keel ses', 'keel sessions ')).toContain('keel sessions ');
    const subs = complete('keel sessions ', 'show');
    for (const sub of ['compact', 'export', 'fork', 'list', 'resume', 'show']) expect(subs).toContain(sub);
    expect(subs).toContain('recent sessions, newest first');
    expect(complete('keel ask --provider ', 'scripted')).toMatch(/ollama\s+openai\s+scripted/);
    expect(complete('keel trust check --b', '--base ')).toContain('keel trust check --base ');
  });

  it('fish: one completion per verb at the top, and flags per command path', async () => {
    const home = keelHome();
    const { stdout } = await keel(['completion', 'fish'], { cwd: home, home });
    expect(stdout).toContain(
      "complete -c keel -f -n '__keel_at \\'sessions\\'' -a list -d 'recent sessions, newest first'",
    );
    expect(stdout).toContain("-n '__keel_at \\'\\'' -a sessions");
    expect(stdout).toContain(
      "complete -c keel -n '__keel_at \\'init\\'' -l provider -d 'openai | ollama' -x -a 'openai ollama'",
    );
  });

  it.skipIf(!which('fish'))(`fish completes verbs, subverbs and choices${skipNote('fish')}`, async () => {
    const home = keelHome();
    const { stdout } = await keel(['completion', 'fish'], { cwd: home, home });
    const file = join(tempDir('keel-fish-'), 'keel.fish');
    writeFileSync(file, stdout);
    // `complete -C LINE` prints what fish would offer, one "candidate<TAB>description" a line
    const complete = (line: string) =>
      execFileSync('fish', ['--no-config', '-c', `source ${file}; complete -C '${line}'`], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, HOME: home },
      })
        .trim()
        .split('\n')
        .map((l) => l.split('\t')[0]);
    expect(complete('keel se')).toEqual(['serve', 'sessions']);
    expect(complete('keel sessions ')).toEqual(['compact', 'export', 'fork', 'list', 'resume', 'show']);
    expect(complete('keel ask --provider ')).toEqual(['ollama', 'openai', 'scripted']);
    expect(complete('keel trust check --b')).toEqual(['--base']);
    expect(complete('keel completion ')).toEqual(['bash', 'fish', 'zsh']);
  });

  it.skipIf(!which('fish'))(`fish -n parses the script${skipNote('fish')}`, async () => {
    const home = keelHome();
    const { stdout } = await keel(['completion', 'fish'], { cwd: home, home });
    const file = join(tempDir('keel-fish-'), 'keel.fish');
    writeFileSync(file, stdout);
    expect(spawnSync('fish', ['-n', file], { encoding: 'utf8' }).status).toBe(0);
  });
});
