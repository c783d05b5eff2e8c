/**
 * Page load to first transcript paint in the browser workspace: chromium (playwright-core) opens a finished
 * session's page from a real `keel serve`; the page marks `keel:first-transcript-paint` in the frame after
 * it draws its first event. Reports the mark's time from navigation start, median and p90 over RUNS loads.
 * Needs `npm run build` first (dist/ and dist/web/) and Debian's chromium at /usr/bin/chromium.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { serve as serveStamped } from './serve.mjs';

const RUNS = 15;
const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'bench-web-token';
const BIN = new URL('../bin/keel.js', import.meta.url).pathname;
if (!existsSync(CHROMIUM)) {
  console.log(`bench/web.mjs: no browser at ${CHROMIUM}`);
  process.exit(0);
}

const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-web-'));
const repo = join(scratch, 'repo');
const home = join(scratch, 'home');
execFileSync('git', ['init', '-q', '-b', 'main', repo]);
writeFileSync(join(repo, 'README.md'), '# demo\n');
execFileSync('git', [
  '-C',
  repo,
  '-c',
  'user.name=b',
  '-c',
  'user.email=b@x',
  'commit',
  '-qm',
  'init',
  '--allow-empty',
]);
execFileSync('mkdir', ['-p', home]);

// a session worth drawing: reasoning, a few tool calls, an answer
const turns = [];
for (let i = 0; i < 5; i++) {
  turns.push({
    reasoning: `step ${i}`,
    text: `Looking at part ${i}.`,
    tool_calls: [{ name: 'list_dir', arguments: {} }],
  });
}
turns.push({ text: 'Done.' });
const { server } = await serveStamped({ turns }, 'bench-model');

const child = spawn(process.execPath, [BIN, 'serve', '--listen', '127.0.0.1:0', '--json'], {
  cwd: repo,
  env: {
    PATH: process.env.PATH,
    HOME: home,
    KEEL_HOME: home,
    KEEL_SERVE_TOKEN: TOKEN,
    KEEL_PROVIDER: 'openai',
    KEEL_BASE_URL: server.url,
    KEEL_MODEL: 'bench-model',
    NO_COLOR: '1',
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const port = await new Promise((resolve, reject) => {
  let out = '';
  child.on('exit', (code) => reject(new Error(`keel serve exited ${code}`)));
  child.stdout.on('data', (d) => {
    out += d;
    if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]).port);
  });
});
const base = `http://127.0.0.1:${port}`;
const auth = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
const created = await (
  await fetch(`${base}/v1/sessions`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ prompt: 'look around', mode: 'ask' }),
  })
).json();
for (let i = 0; i < 300; i++) {
  const s = await (await fetch(`${base}/v1/sessions/${created.session_id}`, { headers: auth })).json();
  if (s.state !== 'running') break;
  await new Promise((r) => setTimeout(r, 100));
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
});
const samples = [];
try {
  for (let i = 0; i < RUNS + 2; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // the tab has the token as if it had opened the address keel serve printed (the page's CSP allows
    // no string evaluation, so the checks below are functions)
    await context.addInitScript((token) => sessionStorage.setItem('keel.token', token), TOKEN);
    const page = await context.newPage();
    await page.goto(`${base}/#/s/${created.session_id}`);
    await page.waitForFunction(() => performance.getEntriesByName('keel:first-transcript-paint').length > 0);
    const ms = await page.evaluate(
      () => performance.getEntriesByName('keel:first-transcript-paint')[0].startTime,
    );
    if (i >= 2) samples.push(ms); // two warm-up loads dropped
    await context.close();
  }
} finally {
  await browser.close();
  child.kill('SIGTERM');
  await server.close();
  rmSync(scratch, { recursive: true, force: true });
}
samples.sort((a, b) => a - b);
const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))];
console.log('| row | median | p90 | runs |');
console.log('| --- | --- | --- | --- |');
console.log(
  `| page load -> first transcript paint (ms) | ${at(0.5).toFixed(1)} | ${at(0.9).toFixed(1)} | ${samples.length} |`,
);
