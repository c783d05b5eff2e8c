/** `keel init`: the user config in one step (flags or questions), the commented project keel.toml, and the first-run hint. */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { gitRepo, tempDir } from '../helpers/tmp.js';
import { baseEnv, KEEL_BIN, keel, keelHome, model } from './harness.js';

/** A port nothing listens on: bound, then closed. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return address.port;
}

const metadataPaths = (server: { requests: { method: string; path: string }[] }) =>
  server.requests.map((r) => `${r.method} ${r.path}`);

describe('keel init with flags', () => {
  it('probes an OpenAI-compatible server, writes the user config under KEEL_HOME and prints its path', async () => {
    const home = keelHome();
    const server = await model([], { models: ['qwen-coder', 'llama'] });
    const run = await keel(
      ['init', '--yes', '--provider', 'openai', '--base-url', server.url, '--model', 'qwen-coder'],
      { cwd: home, home },
    );
    expect(run.stderr).not.toContain('warning');
    expect(run.code).toBe(0);
    const path = join(home, 'config.toml');
    expect(run.stdout).toBe(`${path}\n`);
    expect(parseToml(readFileSync(path, 'utf8'))).toEqual({
      provider: 'openai',
      base_url: server.url,
      model: 'qwen-coder',
    });
    expect(metadataPaths(server)).toEqual(['GET /v1/models']);
    // what init wrote is what every verb now uses
    const shown = await keel(['config', 'show', '--json'], { cwd: home, home });
    const doc = JSON.parse(shown.stdout) as { config: { model: string }; sources: Record<string, string> };
    expect(doc.config.model).toBe('qwen-coder');
    expect(doc.sources.model).toBe(path);
  });

  it("asks Ollama's /api/tags, takes its only model, and --json prints path, provider, base_url, model, models", async () => {
    const home = keelHome();
    const server = await model([], { models: ['qwen2.5-coder:14b'] });
    const run = await keel(['init', '--json', '--provider', 'ollama', '--base-url', server.ollamaUrl], {
      cwd: home,
      home,
    });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      path: join(home, 'config.toml'),
      provider: 'ollama',
      base_url: server.ollamaUrl,
      model: 'qwen2.5-coder:14b',
      models: ['qwen2.5-coder:14b'],
    });
    expect(metadataPaths(server)).toEqual(['GET /api/tags']);
  });

  it('warns when the server lacks the model given, and still writes it', async () => {
    const home = keelHome();
    const server = await model([], { models: ['llama'] });
    const run = await keel(
      ['init', '--yes', '--provider', 'openai', '--base-url', server.url, '--model', 'missing-model'],
      { cwd: home, home },
    );
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('warning: the server has no model "missing-model" (it has: llama)');
    expect(readFileSync(join(home, 'config.toml'), 'utf8')).toContain('model = "missing-model"');
  });

  it('with several models and no --model, names them and writes nothing (exit 2)', async () => {
    const home = keelHome();
    const server = await model([], { models: ['a-model', 'b-model'] });
    const run = await keel(['init', '--yes', '--provider', 'openai', '--base-url', server.url], {
      cwd: home,
      home,
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('pass --model NAME: the server has 2 models (it has: a-model, b-model)');
    expect(existsSync(join(home, 'config.toml'))).toBe(false);
  });

  it('never clobbers an existing config: an error naming it, unless --force', async () => {
    const home = keelHome('model = "mine"\n');
    const path = join(home, 'config.toml');
    const server = await model([], { models: ['new-model'] });
    const args = ['init', '--yes', '--provider', 'openai', '--base-url', server.url, '--model', 'new-model'];
    const refused = await keel(args, { cwd: home, home });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${path} already exists; edit it, or pass --force to replace it`);
    expect(readFileSync(path, 'utf8')).toBe('model = "mine"\n');
    // it refuses before asking the server anything
    expect(server.requests).toEqual([]);
    const json = await keel([...args, '--json'], { cwd: home, home });
    expect(JSON.parse(json.stdout)).toEqual({
      code: 'CONFIG_ERROR',
      exit_code: 2,
      error: `${path} already exists; edit it, or pass --force to replace it`,
    });
    const forced = await keel([...args, '--force'], { cwd: home, home });
    expect(forced.code).toBe(0);
    expect(readFileSync(path, 'utf8')).toContain('model = "new-model"');
  });

  it('a server that cannot be reached is exit 4 naming the URL, unless --no-probe', async () => {
    const home = keelHome();
    const url = `http://127.0.0.1:${await deadPort()}/v1`;
    const args = ['init', '--yes', '--provider', 'openai', '--base-url', url, '--model', 'm'];
    const run = await keel(args, { cwd: home, home });
    expect(run.code).toBe(4);
    expect(run.stderr).toContain(`cannot reach ${url}`);
    expect(run.stderr).toContain('--no-probe');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(join(home, 'config.toml'))).toBe(false);
    const json = await keel([...args, '--json'], { cwd: home, home });
    const doc = JSON.parse(json.stdout) as { code: string; exit_code: number; error: string };
    expect(doc).toMatchObject({ code: 'MODEL_ERROR', exit_code: 4 });
    expect(doc.error).toContain(url);
    const offline = await keel([...args, '--no-probe', '--json'], { cwd: home, home });
    expect(offline.code).toBe(0);
    expect(JSON.parse(offline.stdout)).toMatchObject({ model: 'm', models: null });
  });

  it('a base URL that is no http URL is a usage error naming the flag', async () => {
    const home = keelHome();
    const run = await keel(['init', '--yes', '--provider', 'openai', '--base-url', '127.0.0.1:8000/v1'], {
      cwd: home,
      home,
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--base-url: expected an http:// or https:// URL, got "127.0.0.1:8000/v1"');
  });

  it('without KEEL_HOME writes the XDG config file', async () => {
    const home = tempDir('keel-xdg-');
    const xdg = join(home, 'xdg-config');
    const server = await model([], { models: ['m'] });
    const run = await keel(['init', '--yes', '--provider', 'openai', '--base-url', server.url], {
      cwd: home,
      home,
      env: { KEEL_HOME: undefined, XDG_CONFIG_HOME: xdg },
    });
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(join(xdg, 'keel', 'config.toml'));
    expect(readFileSync(join(xdg, 'keel', 'config.toml'), 'utf8')).toContain('model = "m"');
  });
});

/** Run `keel init` on a pseudo-terminal (util-linux `script`), typing `answers` ahead. */
function initOnTerminal(home: string, answers: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-q', '-e', '-c', `${process.execPath} ${KEEL_BIN} init`, '/dev/null'], {
      cwd: home,
      env: { ...baseEnv(home), TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
    child.stdin.end(answers);
  });
}

describe.skipIf(!existsSync('/usr/bin/script'))('keel init on a terminal', () => {
  it("asks provider and URL, lists the server's models by number, and writes the one picked", async () => {
    const home = keelHome();
    const server = await model([], { models: ['qwen-a', 'llama-b'] });
    // a wrong answer gets the problem and the question again
    const run = await initOnTerminal(home, `vllm\nopenai\n127.0.0.1:1/v1\n${server.url}\n2\n`);
    expect(run.out).toContain('provider: expected "ollama" or "openai", got "vllm"');
    expect(run.out).toContain('the base URL: expected an http:// or https:// URL, got "127.0.0.1:1/v1"');
    expect(run.out).toContain('provider (ollama | openai');
    expect(run.out).toContain('1) qwen-a');
    expect(run.out).toContain('2) llama-b');
    expect(run.code).toBe(0);
    expect(parseToml(readFileSync(join(home, 'config.toml'), 'utf8'))).toEqual({
      provider: 'openai',
      base_url: server.url,
      model: 'llama-b',
    });
  });

  it('a URL nothing answers is said, and the URL asked again; Enter keeps it unchecked', async () => {
    const home = keelHome();
    const server = await model([], { models: ['qwen-a'] });
    const dead = 'http://127.0.0.1:9/v1';
    const run = await initOnTerminal(home, `openai\n${dead}\n${server.url}\n1\n`);
    expect(run.out).toContain(`cannot reach ${dead}`);
    expect(run.out).toContain('base URL (Enter keeps it, unchecked)');
    expect(run.code).toBe(0);
    expect(parseToml(readFileSync(join(home, 'config.toml'), 'utf8'))).toMatchObject({
      base_url: server.url,
    });

    const kept = keelHome();
    const unchecked = await initOnTerminal(kept, `openai\n${dead}\n\nmy-model\n`);
    expect(unchecked.code).toBe(0);
    expect(parseToml(readFileSync(join(kept, 'config.toml'), 'utf8'))).toEqual({
      provider: 'openai',
      base_url: dead,
      model: 'my-model',
    });
  });

  it('input that ends before the last answer writes nothing (exit 130)', async () => {
    const home = keelHome();
    const run = await initOnTerminal(home, 'openai\n');
    expect(run.out).toContain('nothing written');
    expect(run.code).toBe(130);
    expect(existsSync(join(home, 'config.toml'))).toBe(false);
  });
});

/** The template's default lines opened (`# key = v` and `# [table]`), example lines (`#   e.g.`) left shut. */
function openDefaults(text: string): string {
  return text
    .split('\n')
    .map((line) => (/^# (\[[a-z_]+\]|[a-z_]+ = )/.test(line) ? line.slice(2) : line))
    .join('\n');
}

/** Every key the schema knows, nested ones as `table.key`. */
function schemaKeys(): string[] {
  const keys: string[] = [];
  for (const [key, value] of Object.entries(configSchema.shape)) {
    keys.push(key);
    // a table (budgets, timeouts, ...) lists its own keys; `prefault` wraps the object schema
    const inner = (value as unknown as { def?: { innerType?: { shape?: object } } }).def?.innerType?.shape;
    if (inner) for (const sub of Object.keys(inner)) keys.push(`${key}.${sub}`);
  }
  return keys;
}

describe('keel init --project', () => {
  it('writes a commented keel.toml at the repository root (from a subfolder) that loads as the defaults', async () => {
    const repo = gitRepo({ 'src/app.js': 'x\n' });
    const home = keelHome();
    const run = await keel(['init', '--project'], { cwd: join(repo, 'src'), home });
    expect(run.code).toBe(0);
    const path = join(repo, 'keel.toml');
    expect(run.stdout).toBe(`${path}\n`);
    const text = readFileSync(path, 'utf8');
    // commented out: it changes nothing and loads cleanly, with no trust warning
    const plain = tempDir('keel-plain-');
    const defaults = JSON.parse((await keel(['config', 'show', '--json'], { cwd: plain, home })).stdout);
    const shown = await keel(['config', 'show', '--json'], { cwd: repo, home });
    expect(shown.code).toBe(0);
    expect(shown.stderr).toBe('');
    expect(JSON.parse(shown.stdout).config).toEqual(defaults.config);
    expect(JSON.parse(shown.stdout).files.project).toBe(path);

    // every default it shows is the real default: opening them all still loads as the defaults
    writeFileSync(path, openDefaults(text));
    const opened = await keel(['config', 'show', '--json'], { cwd: repo, home });
    expect(opened.stderr).toBe('');
    expect(opened.code).toBe(0);
    expect(JSON.parse(opened.stdout).config).toEqual(defaults.config);
    expect(Object.values(JSON.parse(opened.stdout).sources)).toContain(path);

    // every key of the schema is documented, as a default or as an example
    const documented = new Set<string>();
    let table = '';
    for (const line of text.split('\n')) {
      const header = /^#(?:\s+e\.g\.)?\s+\[\[?([a-z0-9_]+(?:\.[a-z0-9_]+)?)/.exec(line)?.[1];
      if (header) {
        table = header;
        documented.add(header);
        documented.add(header.split('.')[0] ?? header);
        continue;
      }
      const key = /^#(?:\s+e\.g\.)?\s+([a-z_]+) = /.exec(line)?.[1];
      if (key) documented.add(table ? `${table}.${key}` : key);
    }
    const missing = schemaKeys().filter((k) => !documented.has(k));
    expect(missing).toEqual([]);
  });

  it('refuses to replace an existing keel.toml (exit 2, naming it) unless --force', async () => {
    const repo = gitRepo({ 'keel.toml': 'permission = "plan"\n' });
    const home = keelHome();
    const run = await keel(['init', '--project'], { cwd: repo, home });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${join(repo, 'keel.toml')} already exists`);
    expect(readFileSync(join(repo, 'keel.toml'), 'utf8')).toBe('permission = "plan"\n');
    const forced = await keel(['init', '--project', '--force', '--json'], { cwd: repo, home });
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout)).toEqual({ path: join(repo, 'keel.toml') });
    expect(readFileSync(join(repo, 'keel.toml'), 'utf8')).toContain('# permission = "ask"');
  });

  it('does not write keel.toml beside an existing .keel/config.toml', async () => {
    const repo = gitRepo();
    mkdirSync(join(repo, '.keel'));
    writeFileSync(join(repo, '.keel', 'config.toml'), '');
    const run = await keel(['init', '--project'], { cwd: repo, home: keelHome() });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('.keel/config.toml already holds');
    expect(existsSync(join(repo, 'keel.toml'))).toBe(false);
  });
});

describe('the first run', () => {
  it('"no model configured" names the user config path and suggests keel init', async () => {
    const home = keelHome();
    const repo = gitRepo();
    const run = await keel(['ask', 'hello'], { cwd: repo, home });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('no model configured');
    expect(run.stderr).toContain('keel init');
    expect(run.stderr).toContain(join(home, 'config.toml'));
  });
});
