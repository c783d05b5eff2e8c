/**
 * Issue 25, items 13 and 14 (terminal part): a one-shot answer and a fix run's rationale are drawn as
 * Markdown on a terminal, its code blocks coloured as chat colours them unless NO_COLOR says not to (pipes
 * and --json keep the text as written), and a fix run's test runs show
 * their time while they run and when they end.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git, gitRepo, writeFiles } from '../helpers/tmp.js';
import { editTurns, fixtureRepo, planTurns } from './fix-harness.js';
import { keel, keelHome, model, modelFlags } from './harness.js';
import { Pane } from './pane.js';

const ANSWER = [
  '# Findings',
  '',
  'The bug is in **parse()**, see [the docs](https://example.com/parse).',
  '',
  '```js',
  'const x = parse("1");',
  '```',
  '',
  '- first `item`',
  '- second item',
].join('\n');

describe('one-shot answers on a terminal', () => {
  it('keel ask draws the answer as Markdown on a terminal; a pipe and --json keep the text as written', async () => {
    const repo = gitRepo({ 'README.md': '# demo\n' });
    const home = keelHome();
    const tty = await model([{ text: ANSWER, chunk_size: 5 }]);
    const pane = Pane.start(['ask', ...modelFlags(tty), 'where is the bug'], { cwd: repo, home });
    const screen = await pane.waitFor('[keel exited 0]');
    // the Markdown's marks are gone, its structure stays
    expect(screen).not.toContain('**');
    expect(screen).not.toContain('# Findings');
    expect(screen).toMatch(/^Findings$/m);
    expect(screen).toContain('The bug is in parse(), see the docs (https://example.com/parse).');
    expect(screen).toMatch(/^\s+const x = parse\("1"\);$/m);
    expect(screen).toMatch(/^- first item$/m);
    // bold is bold, not asterisks
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape codes are what is checked
    expect(pane.screen(true)).toMatch(/\x1b\[1m(\x1b\[[0-9;]*m)*parse\(\)/);
    // the js fence is coloured by chat's highlighter: the keyword magenta, the string green
    expect(pane.screen(true)).toContain('\x1b[35mconst');
    expect(pane.screen(true)).toContain('\x1b[32m"1"');
    // NO_COLOR: the same answer on a terminal, drawn without a colour
    const noColor = Pane.start(['ask', ...modelFlags(await model([{ text: ANSWER }])), 'where is the bug'], {
      cwd: repo,
      home,
      env: { NO_COLOR: '1' },
    });
    expect(await noColor.waitFor('[keel exited 0]')).toMatch(/^\s+const x = parse\("1"\);$/m);
    expect(noColor.screen(true)).not.toContain('\x1b[3');

    // a pipe gets the answer byte for byte as the model wrote it
    const piped = await keel(['ask', ...modelFlags(await model([{ text: ANSWER }])), 'where is the bug'], {
      cwd: repo,
      home,
    });
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toBe(`${ANSWER}\n`);
    const json = await keel(
      ['ask', '--json', ...modelFlags(await model([{ text: ANSWER }])), 'where is the bug'],
      { cwd: repo, home },
    );
    expect(JSON.parse(json.stdout).summary).toBe(ANSWER);
  });
});

describe('an answer is printed once', () => {
  const read = { name: 'read_file', arguments: { path: 'README.md' } };
  it('a message that repeats one the model wrote beside a tool call is not printed again (pipe and terminal)', async () => {
    const repo = gitRepo({ 'README.md': '# demo\n' });
    const home = keelHome();
    const piped = await keel(
      [
        'ask',
        ...modelFlags(
          await model([
            { text: 'The file has one line.', tool_calls: [read] },
            { text: 'Reading it again. Done.', tool_calls: [{ name: 'list_dir', arguments: { path: '.' } }] },
            // not a repeat: only part of a paragraph was said before
            { text: 'Done.', tool_calls: [{ name: 'grep', arguments: { pattern: 'demo' } }] },
            { text: 'The file has one line.' },
          ]),
        ),
        'how long is it',
      ],
      { cwd: repo, home },
    );
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toBe('The file has one line.\nReading it again. Done.\nDone.\n');

    const server = await model([
      { text: 'I will check.\n\n**The file has one line.**', tool_calls: [read] },
      { text: '**The file has one line.**' },
    ]);
    const pane = Pane.start(['ask', ...modelFlags(server), 'how long is it'], { cwd: repo, home });
    const screen = await pane.waitFor('[keel exited 0]');
    expect(screen).toContain('I will check.');
    expect(screen.split('The file has one line.').length - 1).toBe(1);
  });
});

describe('keel fix on a terminal', () => {
  it('the baseline and verify runs show their time while they run and when they end; the rationale is drawn as Markdown', async () => {
    const repo = fixtureRepo('stats');
    // the tests wait for the test's go-ahead, so the run is seen while it runs, whatever the machine's speed
    writeFiles(repo, {
      'gate.sh': 'until [ -f .go ]; do sleep 0.1; done\nrm -f .go\nexec node --test\n',
      '.gitignore': 'node_modules/\n.go\n',
    });
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'a gate for the tests');
    const server = await model([
      ...planTurns('src/stats.js', '1. Divide by `values.length`.'),
      ...editTurns(
        'src/stats.js',
        '  return sum(values) / (values.length + 1);',
        '  return sum(values) / values.length;',
        // the model's words reach the rationale; an escape in them is shown, never acted on
        'mean divided by **length + 1**; it now divides by the length. \x1b]52;c;cHduZWQ=\x07',
      ),
    ]);
    const home = keelHome();
    const pane = Pane.start(
      ['fix', ...modelFlags(server), '--test-command', 'sh gate.sh', '--issue', 'mean() of [2, 4, 6] is 3'],
      { cwd: repo, home },
    );
    await pane.waitFor(/keel fix: baseline: running `sh gate.sh` · \d+ s/, 20_000);
    const worktree = /snapshot: branch \S+ at (\S+)$/m.exec(pane.history())?.[1] ?? '';
    writeFileSync(join(worktree, '.go'), '');
    await pane.waitFor(/keel fix: verifying attempt 1: running `sh gate.sh` · \d+ s/, 20_000);
    writeFileSync(join(worktree, '.go'), '');
    await pane.waitFor('[keel exited 0]', 20_000);
    const shown = pane.history();
    // each run says how long it took when it ends
    expect(shown).toMatch(/^keel fix: baseline: .*failed.* \(\d+\.\d s\)$/m);
    expect(shown).toMatch(/^keel fix: verifying attempt 1: the tests ran in \d+\.\d s$/m);
    // the rationale, drawn: headings without their marks, the model's words without asterisks
    expect(shown).toMatch(/^Rationale: mean\(\) of \[2, 4, 6\] is 3$/m);
    expect(shown).toMatch(/^Why$/m);
    expect(shown).toContain(
      'mean divided by length + 1; it now divides by the length. \\x1b]52;c;cHduZWQ=\\x07',
    );
    expect(shown).not.toContain('**length + 1**');
    expect(shown).toMatch(/^VERIFIED: /m);
  });
});
