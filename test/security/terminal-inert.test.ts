/**
 * Issue 7, finding 8: escape sequences from the model, a tool, a hook or the repository never reach
 * the terminal raw. A line erase must not disguise a shell call as a read, OSC 52 must not write the
 * clipboard, a newline in an argument must not forge a display line; `--json` keeps the exact text.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseEnv, KEEL_BIN, keel, keelHome, lastSessionEvents, model, modelFlags } from '../e2e/harness.js';
import { Pane } from '../e2e/pane.js';
import { git, gitRepo, tempDir, writeFiles } from '../helpers/tmp.js';

const ESC = '\x1b';
const OSC52 = `${ESC}]52;c;cHduZWQ=\x07`; // "pwned" into the clipboard
const ERASE = `${ESC}[2K\r`; // erase the line, back to column 0
// a shell call dressed up as a harmless read: erase what was printed, then draw a fake line
const DISGUISED = `true #${ERASE}\n  → read_file README.md`;

/** Text whose ESC lands at the very end of the first of the three chunks the script server streams. */
function splitText(): string {
  const rest = `]52;c;cHduZWQ=\x07 then ${ERASE}  → read_file README.md`.padEnd(80, '.');
  return `${'x'.repeat(39)}${ESC}${rest}`;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const RAW = /[\x1b\x07\r\x9b]/;

/** The scripted attack: poisoned text, a disguised shell call, a read of a poisoned path, a poisoned answer. */
function attack() {
  return [
    {
      text: splitText(),
      tool_calls: [
        { name: 'shell', arguments: { command: DISGUISED } },
        { name: 'read_file', arguments: { path: `missing${OSC52}\r\n.md` } },
      ],
    },
    { text: `done ${OSC52}${ERASE}\u202eexe.txt` },
  ];
}

describe('terminal output is inert', () => {
  const repo = gitRepo({ 'README.md': '# demo\n' });
  const home = keelHome();

  it('model text, tool lines and tool errors reach a pipe as visible escapes, never raw', async () => {
    const server = await model(attack());
    const run = await keel(['edit', ...modelFlags(server), 'look around'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('COMPLETED');
    expect(run.stdout).not.toMatch(RAW);
    expect(run.stderr).not.toMatch(RAW);
    // the split sequence and the final answer are shown, escaped
    expect(run.stdout).toContain(`${'x'.repeat(39)}\\x1b]52;c;cHduZWQ=\\x07 then \\x1b[2K\\r`);
    expect(run.stdout).toContain('done \\x1b]52;c;cHduZWQ=\\x07\\x1b[2K\\r\\u202eexe.txt');
    // the shell call is one line that says shell; nothing else claims to be a read of README.md
    expect(run.stderr).toContain('  → shell true #\\x1b[2K\\r\\n  → read_file README.md');
    expect(run.stderr.split('\n').filter((l) => /^\s*→ read_file README\.md/.test(l))).toEqual([]);
    expect(run.stderr).toContain('  → read_file missing\\x1b]52;c;cHduZWQ=\\x07\\r\\n.md');

    // the log keeps the exact bytes the model sent
    const start = lastSessionEvents(home).find((e) => e.type === 'tool_start');
    expect(start?.data).toMatchObject({ tool: 'shell', args: { command: DISGUISED } });

    // and reading the log back is just as inert
    const shown = await keel(['sessions', 'show', sessionIdOf(run.stderr)], { cwd: repo, home });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('tool shell');
    expect(shown.stdout).not.toMatch(RAW);
    expect(shown.stdout).toContain('xxxxx\\x1b]52;c;cHduZWQ=\\x07 then \\x1b[2K');
  });

  it('--json keeps the exact text: JSON escapes it, keel does not alter it', async () => {
    const server = await model(attack());
    const run = await keel(['edit', ...modelFlags(server), '--json', 'look around'], { cwd: repo, home });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(RAW);
    const doc = JSON.parse(run.stdout) as { code: string; summary: string };
    expect(doc.code).toBe('COMPLETED');
    expect(doc.summary).toBe(`done ${OSC52}${ERASE}\u202eexe.txt`);
    expect(run.stdout).toContain('\\u001b]52;c;');
  });

  it('keel check shows a file name with ESC, BEL and a newline as one inert line', async () => {
    const dir = gitRepo();
    const name = `evil${OSC52}\r\nfake.ts:1:1  clean`;
    writeFiles(dir, { [name]: `export const id = '${'AKIA'}${'Q3ZT7XW2MP4KD9RB'}';\n` });
    git(dir, 'add', '-A');
    const run = await keel(['check'], { cwd: dir, home });
    expect(run.code).toBe(1);
    expect(run.stdout).not.toMatch(RAW);
    const lines = run.stdout.split('\n').filter(Boolean);
    expect(lines).toEqual([
      'evil\\x1b]52;c;cHduZWQ=\\x07\\r\\nfake.ts:1:1  clean:1:20  aws-access-key  AKIA****',
    ]);
    const json = await keel(['check', '--json'], { cwd: dir, home });
    const doc = JSON.parse(json.stdout) as { findings: Array<{ file: string }> };
    expect(doc.findings.map((f) => f.file)).toEqual([name]);
  });

  it('keel doctor shows what the model said inert', async () => {
    const server = await model([{ text: `no tools for me ${OSC52}${ERASE}` }], { models: ['m'] });
    const run = await keel(['doctor', ...modelFlags(server, 'm')], { cwd: repo, home });
    expect(run.stdout).toContain('the model did not call read_file');
    expect(run.stdout).toContain('\\x1b]52;c;');
    expect(run.stdout).not.toMatch(RAW);
  });

  it('keel config show shows a project value with C1 and bidi characters inert (JSON leaves them raw)', async () => {
    const dir = gitRepo({ 'keel.toml': 'model = "m\\u009b2J\\u202egpj.exe"\n' });
    const run = await keel(['config', 'show'], { cwd: dir, home });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('"m\\x9b2J\\u202egpj.exe"');
    expect(run.stdout).not.toMatch(/[\x9b\u202e]/);
  });

  it("in a real terminal, only keel's own colours are escape sequences, and a hook's question is inert", async () => {
    const hook = join(tempDir('keel-hook-'), 'ask.mjs');
    writeFileSync(
      hook,
      `process.stdout.write(JSON.stringify({ decision: 'ask', reason: ${JSON.stringify(`${ERASE}read README.md?${OSC52}`)} }));\n`,
    );
    const tty = keelHome(
      `[[hooks]]\nevent = "PreToolUse"\nmatcher = "read_file"\ncommand = ["${process.execPath}", "${hook}"]\n`,
    );
    const server = await model([
      { text: `hi ${OSC52}`, tool_calls: [{ name: 'read_file', arguments: { path: 'README.md' } }] },
      { text: `bye ${ERASE}` },
    ]);
    const args = ['ask', ...modelFlags(server), 'read it'];
    const out = await inTerminal(args, repo, tty, 'n\r'); // Enter sends CR
    expect(out.code).toBe(0);
    // keel still colours its own lines; readline moves the cursor for its prompt
    expect(out.text).toContain(`${ESC}[31mkeel asks:${ESC}[39m`);
    // what is left once keel's own codes are gone; the pty turns a newline into CR LF, readline adds a CR
    // (and the spinner, when the model is slow, redraws its line with CR and erase-line)
    const foreign = out.text
      // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
      .replace(/\r?\x1b\[(?:(?:2|22|31|32|36|39)m|\d*[GJK])/g, '')
      .replace(/\r+\n/g, '\n');
    expect(foreign).not.toMatch(RAW);
    expect(foreign).toContain('keel asks: read_file\n  \\x1b[2K\\rread README.md?\\x1b]52;c;cHduZWQ=\\x07\n');
    expect(foreign).toContain('hi \\x1b]52;c;');
    expect(foreign).toContain('bye \\x1b[2K\\r');
  });
});

describe('a code fence in the full-screen chat is inert, coloured or not', () => {
  it('ESC sequences in the code and an info string that tries to break out are shown as text; the code is still coloured', async () => {
    const server = await model([
      {
        text: [
          'First:',
          '',
          `\`\`\`ts${ESC}]0;pwned\x07${ESC}[2J onerror=1`,
          `const a = "${OSC52}"; // ${ERASE}  → read_file README.md`,
          '```',
          '',
          '```ts',
          `let b = "${ESC}[31m" + "\x9b2J"; // <span class="hljs-keyword">x</span> &lt;`,
          '```',
          '',
          'Last line.',
        ].join('\n'),
      },
    ]);
    const pane = Pane.start(['chat', ...modelFlags(server)], { cwd: gitRepo(), home: keelHome() });
    await pane.waitFor(/ctx \d/);
    pane.type('code please', 'Enter');
    await pane.waitFor('Last line.');
    const end = Date.now() + 10_000;
    let raw = pane.screen(true);
    while (!raw.includes(`${ESC}[35mlet`) && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
      raw = pane.screen(true);
    }
    expect(raw).toContain(`${ESC}[35mlet`); // coloured: the highlighter ran over this text
    const text = pane.screen();
    // the info string is no language keel knows: shown as text, its sequences inert
    expect(text).toContain('```ts\\x1b]0;pwned\\x07\\x1b[2J onerror=1');
    expect(text).toContain('const a = "\\x1b]52;c;cHduZWQ=\\x07"; // \\x1b[2K\\r  → read_file README.md');
    // a span or an entity in the code is the code's own text, not the highlighter's markup
    expect(text).toContain('let b = "\\x1b[31m" + "\\x9b2J"; // <span class="hljs-keyword">x</span> &lt;');
    // nothing but colours: no title, clipboard, erase or clear reached the terminal
    // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
    const foreign = raw.replace(/\x1b\[[\d;]*m/g, '');
    expect(foreign).not.toMatch(RAW);
  });
});

/** The session id from the human summary line on stderr. */
function sessionIdOf(stderr: string): string {
  const id = /session (\S+) · /.exec(stderr)?.[1];
  if (!id) throw new Error(`no session id in: ${stderr}`);
  return id;
}

/** Run keel under script(1), so stdin, stdout and stderr are a real terminal; `input` is typed into it. */
function inTerminal(
  args: string[],
  cwd: string,
  home: string,
  input: string,
): Promise<{ code: number | null; text: string }> {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, KEEL_BIN, ...args].map(quote).join(' ');
  const env: Record<string, string> = { ...baseEnv(home), TERM: 'xterm' };
  delete env.NO_COLOR;
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qefc', command, '/dev/null'], { cwd, env, stdio: 'pipe' });
    let text = '';
    let typed = false;
    child.stdout.on('data', (d: Buffer) => {
      text += d.toString();
      // type the answer once keel asks, as a person would
      if (!typed && text.includes('[y]es / [n]o')) {
        typed = true;
        child.stdin.write(input);
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, text });
    });
  });
}
