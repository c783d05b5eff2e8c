#!/usr/bin/env node
/**
 * Regenerate docs/screenshots/: the browser workspace's main states (the sessions list, also at phone
 * width, a transcript with its per-round charts, the file viewer, a fix run followed live mid-attempt and
 * then verified with its apply controls, a fix run routed by tier with its tiers' charts, a `keel build`
 * run waiting for its tests' approval, a batch run read from the team store with its routing tiers' share
 * of calls and cost, the hub project the config names, one of its workflow runs and one parked on an
 * approval stage; and the project chooser of a server of two projects, the second chosen), taken in Debian's
 * Chromium through playwright-core against the real `keel serve` and the scripted model, in a temporary
 * copy of the `stats` fixture. Run after `npm run build`:
 *
 *   node scripts/screenshots.mjs            # needs /usr/bin/chromium (or CHROMIUM=path)
 *
 * Then `keel chat` in tmux, captured as ANSI text and SVG (scripts/chat-capture.mjs).
 *
 * The PNGs are 1000 px wide (sessions-phone 390 px, a phone's) and one viewport high (40-110 KB each). Chromium's own PNGs are already tight:
 * re-encoding them losslessly (best filter per row, deflate level 9) saved 2 bytes of 258 KB, so they are kept.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { HubStore } from '../dist/hub/hub-store.js';
import { startScriptServer } from '../dist/model/script-server.js';
import { openStore } from '../dist/store/engine.js';
import { Ledger } from '../dist/store/ledger.js';
import { RunQueue } from '../dist/store/queue.js';
import { captureChat } from './chat-capture.mjs';
import { demoRepo } from './demo-repo.mjs';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const OUT = join(ROOT, 'docs', 'screenshots');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const WIDTH = 1000;
const HEIGHT = 760;

if (!existsSync(join(ROOT, 'dist', 'web', 'index.html'))) throw new Error('run npm run build first');
if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (set CHROMIUM)`);

const temp = mkdtempSync(join(tmpdir(), 'keel-shots-'));
const repo = join(temp, 'stats');
const home = join(temp, 'home');
demoRepo(repo, temp);
mkdirSync(home);
writeFileSync(
  join(home, 'config.toml'),
  'hub_project = "team"\n[pricing.demo]\ninput_per_mtok = 2.0\noutput_per_mtok = 10.0\n',
);

const buggy = '  return sum(values) / (values.length + 1);';
const MEDIAN_TEST = [
  "import assert from 'node:assert/strict';",
  "import { test } from 'node:test';",
  "import * as stats from '../src/stats.js';",
  '',
  "test('median of 3, 1, 2 is 2', () => {",
  '  assert.equal(stats.median?.([3, 1, 2]), 2);',
  '});',
  '',
].join('\n');
const edit = (newString, claim) => [
  {
    tool_calls: [
      { name: 'edit_file', arguments: { path: 'src/stats.js', old_string: buggy, new_string: newString } },
    ],
  },
  { text: claim },
];
const model = await startScriptServer({
  turns: [
    // the session: a read, then an answer pointing at the line
    {
      tool_calls: [{ name: 'read_file', arguments: { path: 'src/stats.js' } }],
      usage: { prompt_tokens: 1840, completion_tokens: 42 },
    },
    {
      text: '`mean()` divides by `values.length + 1` in src/stats.js:10, so the mean of `[2, 4, 6]` is 3.\n\nDividing by `values.length` fixes it.',
      usage: { prompt_tokens: 2310, completion_tokens: 96 },
    },
    // the fix run: a plan, a wrong attempt, the right one
    { tool_calls: [{ name: 'read_file', arguments: { path: 'src/stats.js' } }] },
    { text: '1. mean divides by one too many.' },
    ...edit('  return sum(values) / (values.length - 1);', 'Fixed!'),
    // the second attempt answers slowly: the run page is taken while it runs
    ...edit('  return sum(values) / values.length;', 'mean now divides by the length.').map((t, i) =>
      i === 0 ? { ...t, delay_ms: 5000 } : t,
    ),
    // the build run: the test-writing session writes one test file, then waits for the person's yes
    {
      tool_calls: [{ name: 'write_file', arguments: { path: 'test/median.test.js', content: MEDIAN_TEST } }],
    },
    { text: 'The test checks that median([3, 1, 2]) is 2.' },
  ],
});
// the routed fix run: attempt 1 on the cheap tier fails, the escalated attempt 2 on the strong tier verifies
const cheap = await startScriptServer({
  turns: [
    { tool_calls: [{ name: 'read_file', arguments: { path: 'src/stats.js' } }] },
    { text: '1. mean divides by one too many.' },
    ...edit('  return sum(values) / (values.length - 1);', 'Fixed!'),
  ],
});
const strong = await startScriptServer({
  turns: edit('  return sum(values) / values.length;', 'mean now divides by the length.'),
});

// a batch run in the team store (the default SQLite keel.db): two tasks ended, one running, priced calls
{
  let now = Date.parse('2026-12-05T04:00:00Z');
  const clock = () => now;
  const store = await openStore({ engine: 'sqlite', path: join(home, 'keel.db') });
  const queue = new RunQueue(store, { now: clock });
  const ledger = new Ledger(store, clock);
  const tasks = {
    'mean-bug': 'mean() of [2, 4, 6] is 3',
    'sum-empty': 'sum([]) throws',
    'max-empty': 'largest([]) is -Infinity',
  };
  await queue.createRun('nightly', {
    concurrency: 2,
    spec: { file: 'tasks.jsonl' },
    tasks: Object.entries(tasks).map(([id, issue]) => ({ id, spec: { id, repo, issue } })),
  });
  const steps = [
    ['done', [0.0042, 0.0021]],
    ['failed', [0.0038, 0.0029, 0.0017]],
    [null, [0.0024]],
  ];
  // routing sent the cheap calls to the small tier and the hard ones to the large
  for (const [outcome, costs] of steps) {
    const lease = await queue.claim('nightly', 'shots');
    for (const cost of costs) {
      const tier = cost > 0.003 ? 'large' : 'small';
      now += 2500;
      await ledger.record({
        runId: 'nightly',
        taskId: lease.taskId,
        provider: 'openai',
        model: tier === 'large' ? 'demo-32b' : 'demo-7b',
        tier,
        promptTokens: 1800,
        completionTokens: 120,
        latencyMs: 900,
        costUsd: cost,
        costSource: 'priced',
      });
    }
    now += 4000;
    if (outcome)
      await queue.finish(
        lease,
        outcome,
        outcome === 'done'
          ? { branch: `keel/fix-${lease.taskId}-9c1e2a` }
          : { error: 'not verified: a test that passed fails' },
      );
  }

  // the hub project "team" (hub_project in the config): agents, messages, a pull-request review run
  const hub = new HubStore(store, { now: Date.now });
  const auth = await hub.projectOf((await hub.createProjectToken('team')).token);
  const agents = {};
  for (const [name, role] of [
    ['reviewer-a', 'reviewer'],
    ['reviewer-b', 'reviewer'],
    ['builder', 'builder'],
    ['triage', 'triage'],
  ]) {
    const { agent_id } = await hub.registerAgent(auth, name, role);
    agents[name] = { agentId: agent_id, projectId: auth.projectId, name };
  }
  await store.run("UPDATE hub_agents SET last_seen = $1 WHERE name = 'triage'", [Date.now() - 3_600_000]);
  for (const [from, to, body] of [
    ['builder', 'reviewer-a', 'PR #41 is ready: mean() divides by the length now.'],
    ['reviewer-a', 'builder', 'Looks right; add a test for the empty list.'],
    ['builder', 'reviewer-b', 'Could you check the <b>sum</b> edge case?'],
  ])
    await hub.send(agents[from], { to, body, idempotency_key: `${from}-${to}` });
  const sha = (t) => createHash('sha256').update(t).digest('hex');
  const at = Date.now() - 600_000;
  const run = 'b7e1c2d4-5f60-4a1b-9c3d-2e8f7a6b5c40';
  await store.run(
    `INSERT INTO hub_runs (id, workflow, workflow_sha256, source, event, delivery_id, body_sha256,
       signal_secret_env, status, stage_index, created_at, updated_at, event_count, head_hash, head_mac)
     VALUES ($1, 'pr-review', $2, 'github', 'pull_request', 'd-41', $3, 'DEPLOY_SECRET', 'running', 1, $4, $4, 4, 'h', 'm')`,
    [run, sha('workflow'), sha('payload'), at],
  );
  await store.run(
    `INSERT INTO hub_run_stages (run_id, position, id, kind, state, attempt, min_producers, started_at, ended_at)
     VALUES ($1, 0, 'review', 'quorum', 'done', 1, 2, $2, $3)`,
    [run, at, at + 90_000],
  );
  await store.run(
    `INSERT INTO hub_run_stages (run_id, position, id, kind, state, attempt, signal, started_at)
     VALUES ($1, 1, 'deploy', 'await_signal', 'parked', 1, 'deployed', $2)`,
    [run, at + 90_000],
  );
  for (const [i, name] of ['reviewer-a', 'reviewer-b'].entries()) {
    const id = agents[name].agentId;
    await store.run(
      'INSERT INTO hub_stage_eligible (run_id, stage_id, agent_id, agent_name) VALUES ($1, $2, $3, $4)',
      [run, 'review', id, name],
    );
    const request = `m_req${i}`;
    await store.run(
      `INSERT INTO hub_stage_requests (message_id, run_id, stage_id, attempt, agent_id, request_hash, body, created_at)
       VALUES ($1, $2, 'review', 1, $3, $4, 'Review PR #41', $5)`,
      [request, run, id, sha(`request ${i}`), at],
    );
    await store.run(
      `INSERT INTO hub_stage_replies (request_message_id, message_id, run_id, stage_id, attempt, agent_id, request_hash, reply_hash, received_at)
       VALUES ($1, $2, $3, 'review', 1, $4, $5, $6, $7)`,
      [request, `m_rep${i}`, run, id, sha(`request ${i}`), sha(`reply ${i}`), at + 60_000 + i * 20_000],
    );
  }
  await store.run(
    `INSERT INTO hub_signals (run_id, signal_id, name, body_sha256, received_at) VALUES ($1, 'sig-1', 'deployed', $2, $3)`,
    [run, sha('signal'), at + 120_000],
  );
  for (const [seq, type] of ['run_started', 'stage_started', 'stage_done', 'stage_parked'].entries())
    await store.run(
      `INSERT INTO hub_run_events (run_id, seq, ts, type, data, prev, hash, mac) VALUES ($1, $2, $3, $4, '{}', 'p', $5, 'm')`,
      [run, seq + 1, at + seq * 30_000, type, sha(`event ${seq}`)],
    );

  // a pr-ship run parked on its approval stage: a person decides it on the page
  const gated = 'c3d9a7e1-2b48-4f06-8d5e-9a1f0c7b6e21';
  const since = Date.now() - 300_000;
  await store.run(
    `INSERT INTO hub_runs (id, workflow, workflow_sha256, source, event, delivery_id, body_sha256,
       signal_secret_env, status, stage_index, created_at, updated_at, event_count, head_hash, head_mac)
     VALUES ($1, 'pr-ship', $2, 'github', 'pull_request', 'd-42', $3, NULL, 'running', 0, $4, $4, 3, 'h', 'm')`,
    [gated, sha('ship workflow'), sha('payload 42'), since],
  );
  await store.run(
    `INSERT INTO hub_run_stages (run_id, position, id, kind, state, attempt, prompt, started_at)
     VALUES ($1, 0, 'sign-off', 'approval', 'parked', 1, 'Ship PR 42?', $2)`,
    [gated, since],
  );
  await store.run(
    `INSERT INTO hub_run_stages (run_id, position, id, kind, state, attempt, mode)
     VALUES ($1, 1, 'ship', 'agent', 'pending', 0, 'ask')`,
    [gated],
  );
  await store.run(
    'INSERT INTO hub_stage_eligible (run_id, stage_id, agent_id, agent_name) VALUES ($1, $2, $3, $4)',
    [gated, 'ship', agents.builder.agentId, 'builder'],
  );
  for (const [seq, type] of ['run_started', 'stage_started', 'stage_parked'].entries())
    await store.run(
      `INSERT INTO hub_run_events (run_id, seq, ts, type, data, prev, hash, mac) VALUES ($1, $2, $3, $4, '{}', 'p', $5, 'm')`,
      [gated, seq + 1, since + seq * 1000, type, sha(`gated event ${seq}`)],
    );
  await store.close();
}

// a copy of the fixture fixed through [[routing.tiers]] by the real `keel fix`, in its own KEEL_HOME
const routedRepo = join(temp, 'routed');
const routedHome = join(temp, 'routed-home');
demoRepo(routedRepo, temp);
mkdirSync(routedHome);
const tier = (name, url, input, output) =>
  `[[routing.tiers]]\nname = "${name}"\nmodel = "${name}-model"\nbase_url = "${url}"\napi_key_env = "KEY"\ninput_per_mtok = ${input}\noutput_per_mtok = ${output}\n\n[pricing."${name}-model"]\ninput_per_mtok = ${input}\noutput_per_mtok = ${output}\n`;
writeFileSync(
  join(routedHome, 'config.toml'),
  `provider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n\n${tier('cheap', cheap.url, 0.1, 0.4)}\n${tier('strong', strong.url, 3, 15)}`,
);
// a second project for the project chooser (keel serve --project stats --project docs-site)
const docsRepo = join(temp, 'docs-site');
mkdirSync(join(docsRepo, 'scripts'), { recursive: true });
writeFileSync(join(docsRepo, 'README.md'), '# docs-site\n\nThe project documentation, built from docs/.\n');
writeFileSync(
  join(docsRepo, 'scripts', 'changelog.js'),
  "export function changelog(entries) {\n  return entries.map((e) => '- ' + e.title).join('\\n');\n}\n",
);
for (const args of [
  ['init', '-q', '-b', 'main'],
  ['add', '-A'],
  ['-c', 'user.name=demo', '-c', 'user.email=demo@example.com', 'commit', '-q', '-m', 'initial'],
])
  execFileSync('git', args, { cwd: docsRepo, env: { PATH: process.env.PATH, HOME: temp } });
const docsModel = await startScriptServer({
  turns: [
    {
      text: 'The changelog is built by `changelog()` in scripts/changelog.js:1, one line per entry.',
      usage: { prompt_tokens: 1210, completion_tokens: 38 },
    },
  ],
});
const keelEnv = (keelHome, extra = {}) => ({
  PATH: process.env.PATH,
  HOME: keelHome,
  KEEL_HOME: keelHome,
  NO_COLOR: '1',
  LANG: 'C.UTF-8',
  ...extra,
});
const routedRun = () =>
  new Promise((resolve, reject) => {
    const fix = spawn(
      process.execPath,
      [
        join(ROOT, 'bin', 'keel.js'),
        'fix',
        '--repo',
        routedRepo,
        '--json',
        '--issue',
        'mean() of [2, 4, 6] returns 3, not 4',
      ],
      { cwd: routedHome, env: keelEnv(routedHome, { KEY: 'k' }), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    fix.stdout.on('data', (d) => {
      out += d;
    });
    fix.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out).session_id) : reject(new Error(`keel fix exited ${code}: ${out}`)),
    );
  });

/** The real `keel serve` in `cwd`: its address, a token-bearing `api`, and the process. */
async function startServe(cwd, keelHome, args, extraEnv = {}) {
  const proc = spawn(
    process.execPath,
    [join(ROOT, 'bin', 'keel.js'), 'serve', '--listen', '127.0.0.1:0', '--json', ...args],
    {
      cwd,
      env: keelEnv(keelHome, extraEnv),
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const { port, token } = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]));
    });
    proc.once('exit', (code) => reject(new Error(`keel serve exited ${code}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  const api = async (method, path, body) => {
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return res.json();
  };
  return { proc, base, token, api };
}
const until = async (read, done) => {
  for (let i = 0; i < 300; i++) {
    if (done(await read())) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('timed out waiting for keel serve');
};

let serve;
let routed;
let projects;
let browser;
try {
  const routedId = await routedRun();
  serve = await startServe(repo, home, ['--provider', 'openai', '--base-url', model.url, '--model', 'demo']);
  routed = await startServe(routedRepo, routedHome, [], { KEY: 'k' });
  projects = await startServe(repo, home, [
    ...['--project', repo, '--project', docsRepo],
    ...['--provider', 'openai', '--base-url', docsModel.url, '--model', 'demo'],
  ]);
  const { base, token, api } = serve;
  const { session_id: session } = await api('POST', '/v1/sessions', {
    prompt: 'Why is mean() of [2, 4, 6] 3?',
  });
  await until(
    () => api('GET', `/v1/sessions/${session}`),
    (s) => s.state === 'completed',
  );
  const { run_id: run } = await api('POST', '/v1/fix', { task: 'mean() of [2, 4, 6] returns 3, not 4' });

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
  const page = await browser.newPage({ viewport: { width: WIDTH, height: HEIGHT }, deviceScaleFactor: 1 });
  await page.goto(`${base}/#token=${token}`);
  mkdirSync(OUT, { recursive: true });
  const shot = async (name, hash, ready, height = HEIGHT, { width = WIDTH, at = base, scrollTo } = {}) => {
    await page.setViewportSize({ width, height });
    await page.goto(`${at}/${hash}`);
    await page.locator(ready).first().waitFor({ timeout: 60_000 });
    if (scrollTo) await page.locator(scrollTo).first().scrollIntoViewIfNeeded();
    await page.evaluate(() => document.fonts.ready);
    const file = join(OUT, `${name}.png`);
    const png = await page.screenshot();
    writeFileSync(file, png);
    console.log(`${file}: ${png.length} bytes`);
  };
  await shot('sessions', '#/', `a[href="#/s/${session}"]`);
  await shot('sessions-phone', '#/', `a[href="#/s/${session}"]`, 844, { width: 390 });
  await shot('transcript', `#/s/${session}`, 'svg.chart', 900);
  await shot('files', '#/files/src/stats.js:10', 'pre.code #L10');
  // the fix run as it happens (attempt 1 judged, attempt 2 at work), then verified with its apply controls
  await shot('run-live', `#/runs/${run}`, 'li[data-step="attempt-2"]', 900);
  await until(
    () => api('GET', `/v1/runs/${run}`),
    (r) => r.status !== 'running',
  );
  await shot('run', `#/runs/${run}`, 'section.apply:not([hidden])', 900);
  // a build run: the tests it wrote wait for the person's Approve / Reject with their diff
  const { run_id: build } = await api('POST', '/v1/build', {
    feature: 'add a median function to src/stats.js',
  });
  await shot('build', `#/runs/${build}`, 'section[aria-label="Approve the tests"] pre.diff', 900);
  // the routed fix run (another keel serve, on its KEEL_HOME) with its tiers' share of calls and cost
  const routedToken = routed.token;
  await page.goto(`${routed.base}/#token=${routedToken}`);
  await shot('run-tiers', `#/runs/${routedId}`, 'section[aria-label="Routing tiers"] svg', 900, {
    at: routed.base,
    scrollTo: 'section[aria-label="Routing tiers"]',
  });
  await shot('batch', '#/batches/nightly', 'svg.chart.line', 1100);
  await shot('hub', '#/hub', 'tr[data-run]', 900);
  await shot('hub-run', '#/hub/runs/b7e1c2d4-5f60-4a1b-9c3d-2e8f7a6b5c40', 'tr[data-signal]', 900);
  await shot(
    'hub-approval',
    '#/hub/runs/c3d9a7e1-2b48-4f06-8d5e-9a1f0c7b6e21',
    'section[data-approval="sign-off"]',
  );
  // keel serve --project stats --project docs-site: the second project chosen in the header
  const { session_id: docsSession } = await projects.api('POST', '/v1/sessions?project=docs-site', {
    prompt: 'Where is the changelog built?',
  });
  await until(
    () => projects.api('GET', `/v1/sessions/${docsSession}?project=docs-site`),
    (s) => s.state === 'completed',
  );
  await page.goto(`${projects.base}/#token=${projects.token}`);
  await page.getByLabel('Project', { exact: true }).selectOption('docs-site');
  await shot('projects', '#/', `a[href="#/s/${docsSession}"]`, 480, { at: projects.base });
} finally {
  await browser?.close();
  // each server ends before its KEEL_HOME goes (the waiting build run is cancelled into its audit log)
  await Promise.all(
    [serve, routed, projects].map(
      (s) =>
        s &&
        s.proc.exitCode === null &&
        new Promise((resolve) => {
          s.proc.once('exit', resolve);
          s.proc.kill('SIGTERM');
        }),
    ),
  );
  await model.close();
  await docsModel.close();
  await cheap.close();
  await strong.close();
  rmSync(temp, { recursive: true, force: true });
}

// the chat captures: keel chat in tmux, as text with its escapes and as SVG
await captureChat(OUT);
