/**
 * What keel's first request costs, per mode: o200k tokens of the system prompt, of the tool schemas and of
 * the whole body, and which tools it offers, for `keel <verb> "hi"` in a small committed git repository,
 * as the scripted model server received it. Deterministic: one run per verb is enough. Build first.
 * Run: node bench/first-request.mjs [PROMPT]   (KEEL_BIN=/path/to/bin/keel.js measures another build;
 * BENCH_REPO=/path/to/repo runs in that repository instead of the small one made here; BENCH_SKILLS=N gives
 * the user N skills in KEEL_HOME/skills, each with a one-line description, to measure the skills catalog;
 * KEEL_HUB_URL, KEEL_HUB_TOKEN and KEEL_AGENT_NAME set (any values: no hub is called) measure the hub tools too)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { serve } from './serve.mjs';
import { assertOk, runNode } from './spawn-timed.mjs';

const MODEL = 'bench-model';
const BIN = process.env.KEEL_BIN ?? new URL('../bin/keel.js', import.meta.url).pathname;
const VERBS = ['ask', 'plan', 'edit', 'run'];
const PROMPT = process.argv[2] ?? 'hi';
const SKILLS = Number(process.env.BENCH_SKILLS ?? 0);
// the hub tools a session has when the hub's variables are set (read-only `ask` offers these three)
const HUB = process.env.KEEL_HUB_URL ? ['hub_peers', 'hub_inbox', 'hub_await'] : [];
const scratch = mkdtempSync(join(tmpdir(), 'keel-first-'));

/** A fresh KEEL_HOME, with BENCH_SKILLS skills of the usual shape (a name, a sentence, a body). */
function keelHome() {
  const home = mkdtempSync(join(scratch, 'home-'));
  for (let i = 1; i <= SKILLS; i++) {
    const dir = join(home, 'skills', `skill-${i}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'SKILL.md'),
      `---\nname: skill-${i}\ndescription: Does task number ${i} of the project the way the team agreed, step by step.\n---\n# Skill ${i}\n\nThe steps.\n`,
    );
  }
  return home;
}

/** A small committed project: a few source files, a test script, a README. */
function project() {
  const dir = mkdtempSync(join(scratch, 'repo-'));
  const files = {
    'package.json': JSON.stringify({ name: 'demo', type: 'module', scripts: { test: 'node --test' } }),
    'README.md': '# demo\n\nGreets people.\n',
    'src/greet.js': "export function greet(name) {\n  return 'Hello, ' + name;\n}\n",
    'src/shout.js':
      "import { greet } from './greet.js';\nexport const shout = (n) => greet(n).toUpperCase();\n",
    'test/greet.test.js':
      "import { test } from 'node:test';\nimport { greet } from '../src/greet.js';\ntest('greets', () => greet('a'));\n",
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  for (const args of [
    ['init', '-q'],
    ['add', '-A'],
    ['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', 'commit', '-q', '-m', 'start'],
  ]) {
    const r = spawnSync('git', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  }
  return dir;
}

const tok = (value) => encode(typeof value === 'string' ? value : JSON.stringify(value)).length;

async function firstRequest(verb) {
  const { server } = await serve(
    { turns: [{ text: 'OK', usage: { prompt_tokens: 500, completion_tokens: 1 } }] },
    MODEL,
  );
  const home = keelHome();
  try {
    const flags = ['--provider', 'openai', '--base-url', server.url, '--model', MODEL];
    const cwd = process.env.BENCH_REPO ?? project();
    assertOk(await runNode([BIN, verb, PROMPT, ...flags], { cwd, home }), `keel ${verb}`);
  } finally {
    await server.close();
  }
  const body = server.requests.find((r) => r.method === 'POST' && r.path === '/v1/chat/completions')?.body;
  if (!body) throw new Error(`keel ${verb}: no chat request reached the server`);
  const system = body.messages.find((m) => m.role === 'system')?.content ?? '';
  const others = body.messages.filter((m) => m.role !== 'system');
  const tools = body.tools ?? [];
  return {
    verb,
    system: tok(system),
    tools: tok(tools),
    messages: tok(others),
    body: tok(body),
    count: tools.length,
    names: tools.map((t) => t.function?.name ?? t.name),
    perTool: tools.map((t) => [t.function?.name ?? t.name, tok(t)]),
  };
}

/** What each folded family costs once activated: `keel ask` whose model activates them all, then answers. */
async function activated() {
  const script = {
    turns: [
      {
        tool_calls: [
          { id: 'c1', name: 'tools', arguments: { activate: ['agent', 'code_graph', 'memory', ...HUB] } },
        ],
      },
      { text: 'OK' },
    ],
  };
  const { server } = await serve(script, MODEL);
  const home = mkdtempSync(join(scratch, 'home-'));
  try {
    const flags = ['--provider', 'openai', '--base-url', server.url, '--model', MODEL];
    assertOk(
      await runNode([BIN, 'ask', PROMPT, ...flags], { cwd: project(), home }),
      'keel ask (activating)',
    );
  } finally {
    await server.close();
  }
  const bodies = server.requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions');
  const tools = bodies[1]?.body.tools ?? [];
  return tools.map((t) => [t.function?.name ?? t.name, tok(t)]);
}

const rows = [];
for (const verb of VERBS) rows.push(await firstRequest(verb));
const families = await activated();
rmSync(scratch, { recursive: true, force: true });

const out = [
  `first request of \`keel <verb> ${JSON.stringify(PROMPT)}\`${SKILLS ? ` with ${SKILLS} skills` : ''}, o200k tokens (system + tools is what every request repeats)`,
  '',
  '| verb | system | tools | system + tools | other messages | whole body | tools offered |',
  '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ...rows.map(
    (r) =>
      `| ${r.verb} | ${r.system} | ${r.tools} | ${r.system + r.tools} | ${r.messages} | ${r.body} | ${r.count} |`,
  ),
  '',
  ...rows.map((r) => `${r.verb}: ${r.perTool.map(([n, t]) => `${n} ${t}`).join(', ')}`),
  '',
  `ask, after activating the families: ${families.map(([n, t]) => `${n} ${t}`).join(', ')}`,
];
process.stdout.write(`${out.join('\n')}\n`);
