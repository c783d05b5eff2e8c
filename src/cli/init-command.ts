/**
 * `keel init`: set keel up in one step. Asks (on a terminal) or takes flags for the provider, the server
 * and the model, probes the server for the models it has, and writes the user config; `--project`
 * writes a commented keel.toml into the workspace instead.
 */
import { existsSync, lstatSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Interface } from 'node:readline';
import { stringify } from 'smol-toml';
import { apiKeyFor } from '../config/load.js';
import { keelPaths } from '../config/paths.js';
import { ModelError } from '../model/types.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { workspace } from '../term/options.js';
import { PROJECT_TEMPLATE } from './init-template.js';
import { dim, red } from './render.js';

export interface InitFlags {
  provider?: string;
  baseUrl?: string;
  model?: string;
  yes?: boolean;
  force?: boolean;
  project?: boolean;
  /** false with --no-probe. */
  probe?: boolean;
  json?: boolean;
  cwd?: string;
}

type InitProvider = 'openai' | 'ollama';

/** Where each provider's server usually listens: Ollama's native port, vLLM's OpenAI-compatible one. */
export const DEFAULT_BASE_URL: Record<InitProvider, string> = {
  ollama: 'http://127.0.0.1:11434',
  openai: 'http://127.0.0.1:8000/v1',
};

/** A failure with its code; the one place below turns it into words or a JSON document. */
class InitError extends Error {
  constructor(
    readonly code: 'CONFIG_ERROR' | 'ENVIRONMENT_ERROR' | 'MODEL_ERROR' | 'CANCELLED',
    message: string,
  ) {
    super(message);
  }
}

const EXIT_FOR = {
  CONFIG_ERROR: EXIT.usage,
  ENVIRONMENT_ERROR: EXIT.environment,
  MODEL_ERROR: EXIT.model,
  CANCELLED: EXIT.interrupted,
};

/** Run `keel init`; returns the exit status. */
export async function runInit(flags: InitFlags): Promise<number> {
  try {
    return flags.project ? writeProjectConfig(flags) : await writeUserConfig(flags);
  } catch (err) {
    if (!(err instanceof InitError)) throw err;
    const exit = EXIT_FOR[err.code];
    if (flags.json)
      process.stdout.write(`${JSON.stringify({ code: err.code, exit_code: exit, error: err.message })}\n`);
    else process.stderr.write(`${red('keel init:')} ${inertLine(err.message)}\n`);
    return exit;
  }
}

async function writeUserConfig(flags: InitFlags): Promise<number> {
  const path = keelPaths().userConfig;
  // before any question: an answer the user cannot keep is time wasted
  refuseExisting(path, flags.force);
  const interactive =
    !flags.yes && !flags.json && process.stdin.isTTY === true && process.stderr.isTTY === true;
  const rl = interactive ? await openPrompt() : undefined;
  try {
    const provider = await chooseProvider(flags.provider, rl);
    let baseUrl =
      flags.baseUrl !== undefined
        ? checkUrl(flags.baseUrl, '--base-url')
        : await askUntil(rl, 'base URL', DEFAULT_BASE_URL[provider], (v) => checkUrl(v, 'the base URL'));
    let models: string[] | null = null;
    // a server that does not answer a URL the person typed: say why and ask again; Enter keeps it unchecked
    while (flags.probe !== false) {
      try {
        models = await probe(provider, baseUrl);
        break;
      } catch (err) {
        if (!rl || flags.baseUrl !== undefined || !(err instanceof InitError)) throw err;
        process.stderr.write(
          `  ${inertLine(err.message.replace(/; start the server, or pass --no-probe.*$/, ''))}\n`,
        );
        const again = await askUntil(rl, 'base URL (Enter keeps it, unchecked)', baseUrl, (v) =>
          checkUrl(v, 'the base URL'),
        );
        if (again === baseUrl) break;
        baseUrl = again;
      }
    }
    const model = await chooseModel(flags, models, rl);
    const values = { provider, base_url: baseUrl, model };
    const text = `# keel's user config, written by \`keel init\`. \`keel init --project\` writes a keel.toml that
# lists every key with its default; \`keel config show\` prints what is in effect.
${stringify(values)}\n`;
    writeConfig(path, text, flags.force);
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ path, provider, base_url: baseUrl, model, models })}\n`);
      return EXIT.ok;
    }
    const wrote = `wrote ${provider} ${inertLine(model)} at ${inertLine(baseUrl)}; try: keel doctor`;
    process.stderr.write(`${dim(wrote)}\n`);
    process.stdout.write(`${path}\n`);
    return EXIT.ok;
  } finally {
    rl?.close();
  }
}

function writeProjectConfig(flags: InitFlags): number {
  const given = ['--provider', '--base-url', '--model'].filter(
    (_, i) => [flags.provider, flags.baseUrl, flags.model][i] !== undefined,
  );
  if (given.length)
    throw new InitError(
      'CONFIG_ERROR',
      `--project writes the commented keel.toml only; ${given.join(', ')} belong to \`keel init\` without --project`,
    );
  const root = workspace(flags);
  if (!existsSync(root)) throw new InitError('CONFIG_ERROR', `workspace ${root} is not a folder`);
  // either name is the project's config; writing keel.toml beside .keel/config.toml would make two
  const other = join(root, '.keel', 'config.toml');
  if (existsSync(other))
    throw new InitError('CONFIG_ERROR', `${other} already holds this project's config; edit it instead`);
  const path = join(root, 'keel.toml');
  refuseExisting(path, flags.force);
  writeConfig(path, PROJECT_TEMPLATE, flags.force);
  if (flags.json) process.stdout.write(`${JSON.stringify({ path })}\n`);
  else {
    process.stderr.write(
      `${dim('every setting is commented out with its default; open a line to set it')}\n`,
    );
    process.stdout.write(`${path}\n`);
  }
  return EXIT.ok;
}

function refuseExisting(path: string, force: boolean | undefined): void {
  // lstat: a dangling link is there too
  if (!force && lstatSync(path, { throwIfNoEntry: false }))
    throw new InitError('CONFIG_ERROR', `${path} already exists; edit it, or pass --force to replace it`);
}

function writeConfig(path: string, text: string, force: boolean | undefined): void {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(path), { recursive: true });
    if (!force) {
      // 'wx' fails rather than replace a file (or follow a link) that appeared since the check
      writeFileSync(path, text, { flag: 'wx' });
      return;
    }
    // replaced by a rename, never written through: a keel.toml a repository made a link to ~/.bashrc stays a link's problem
    writeFileSync(tmp, text, { flag: 'wx' });
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EEXIST' && !force) refuseExisting(path, false);
    throw new InitError('ENVIRONMENT_ERROR', `cannot write ${path}: ${e.code ?? e.message}`);
  }
}

/**
 * Questions on the terminal. Lines are queued as they arrive, so answers typed (or pasted) ahead are
 * kept for the questions that follow; Ctrl+C or the end of input stops init with nothing written.
 */
class Prompt {
  private readonly lines: string[] = [];
  private waiting?: { resolve(line: string): void; reject(err: Error): void };
  private ended?: InitError;

  constructor(private readonly rl: Interface) {
    rl.on('line', (line) => {
      const waiting = this.waiting;
      this.waiting = undefined;
      if (waiting) waiting.resolve(line);
      else this.lines.push(line);
    });
    const stop = (why: string) => {
      this.ended ??= new InitError('CANCELLED', `${why}; nothing written`);
      this.waiting?.reject(this.ended);
      this.waiting = undefined;
    };
    rl.on('SIGINT', () => {
      stop('interrupted');
      rl.close();
    });
    rl.on('close', () => stop('input ended before every question had an answer'));
  }

  /** One question with a default (Enter keeps it). */
  async question(text: string): Promise<string> {
    // readline redraws its prompt as the user edits the line, so the question must be that prompt
    this.rl.setPrompt(text);
    this.rl.prompt();
    const queued = this.lines.shift();
    if (queued !== undefined) return queued.trim();
    if (this.ended) throw this.ended;
    return (
      await new Promise<string>((resolve, reject) => {
        this.waiting = { resolve, reject };
      })
    ).trim();
  }

  close(): void {
    this.rl.close();
    // readline leaves a terminal's stdin flowing after an end of input it saw first; paused, the process can exit
    process.stdin.pause();
  }
}

async function openPrompt(): Promise<Prompt> {
  const { createInterface } = await import('node:readline');
  return new Prompt(createInterface({ input: process.stdin, output: process.stderr, terminal: true }));
}

/** One question on the terminal with a default (Enter keeps it); without a terminal, the default. */
async function ask(rl: Prompt | undefined, question: string, fallback: string): Promise<string> {
  if (!rl) return fallback;
  const answer = await rl.question(`${question} ${dim(`[${inertLine(fallback)}]`)}: `);
  return answer || fallback;
}

async function chooseProvider(given: string | undefined, rl: Prompt | undefined): Promise<InitProvider> {
  if (given !== undefined) return checkProvider(given, '--provider');
  return askUntil(rl, 'provider (ollama | openai for any OpenAI-compatible server)', 'ollama', (v) =>
    checkProvider(v, 'provider'),
  );
}

function checkProvider(value: string, where: string): InitProvider {
  if (value === 'ollama' || value === 'openai') return value;
  throw new InitError('CONFIG_ERROR', `${where}: expected "ollama" or "openai", got "${value}"`);
}

/** Ask until `check` takes the answer; a person gets the problem and the question again, a script the error. */
async function askUntil<T>(
  rl: Prompt | undefined,
  question: string,
  fallback: string,
  check: (answer: string) => T,
): Promise<T> {
  for (;;) {
    const answer = await ask(rl, question, fallback);
    try {
      return check(answer);
    } catch (err) {
      if (!rl || !(err instanceof InitError)) throw err;
      process.stderr.write(`  ${inertLine(err.message)}\n`);
    }
  }
}

function checkUrl(value: string, where: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new InitError('CONFIG_ERROR', `${where}: expected an http:// or https:// URL, got "${value}"`);
  return value.replace(/\/+$/, '');
}

/** The models the server has; a server that does not answer is a MODEL_ERROR naming its URL. */
async function probe(provider: InitProvider, baseUrl: string): Promise<string[]> {
  const signal = AbortSignal.timeout(10_000);
  try {
    if (provider === 'ollama') {
      const { createOllamaProvider } = await import('../model/ollama.js');
      return (await createOllamaProvider({ baseUrl, metadataTimeoutMs: 10_000 }).listModels?.(signal)) ?? [];
    }
    const { createOpenAiProvider } = await import('../model/openai.js');
    const apiKey = apiKeyFor('OPENAI_API_KEY');
    return (await createOpenAiProvider({ baseUrl, apiKey, timeoutMs: 10_000 }).listModels?.(signal)) ?? [];
  } catch (err) {
    const said =
      err instanceof ModelError ? err.message : `cannot reach ${baseUrl}: ${(err as Error).message}`;
    // Ollama's own port answers /v1 too, and an OpenAI-compatible URL usually ends in /v1
    const hint =
      provider === 'openai' && !/\/v1$/.test(baseUrl) ? ` (OpenAI-compatible URLs usually end in /v1)` : '';
    throw new InitError(
      'MODEL_ERROR',
      `${said}${hint}; start the server, or pass --no-probe to write the config anyway`,
    );
  }
}

/** Whether the server lists `model` (Ollama lists `name:latest` for a bare `name`). */
function listed(models: string[], model: string): boolean {
  return models.some((m) => m === model || m === `${model}:latest` || m.replace(/:latest$/, '') === model);
}

async function chooseModel(
  flags: InitFlags,
  models: string[] | null,
  rl: Prompt | undefined,
): Promise<string> {
  if (flags.model !== undefined) {
    if (!flags.model.trim()) throw new InitError('CONFIG_ERROR', '--model: expected a model name');
    if (models && !listed(models, flags.model))
      process.stderr.write(
        `${red('keel init: warning:')} the server has no model "${inertLine(flags.model)}"${shownModels(models)}; writing it anyway\n`,
      );
    return flags.model;
  }
  if (rl) return pickModel(rl, models ?? []);
  if (models === null) throw new InitError('CONFIG_ERROR', '--model is needed with --no-probe');
  if (models.length === 1 && models[0]) return models[0];
  throw new InitError(
    'CONFIG_ERROR',
    models.length
      ? `pass --model NAME: the server has ${models.length} models${shownModels(models)}`
      : 'the server lists no models; pull one first, or pass --model NAME',
  );
}

function shownModels(models: string[]): string {
  if (!models.length) return ' (it lists none)';
  const shown = models.slice(0, 12).map(inertLine).join(', ');
  return ` (it has: ${shown}${models.length > 12 ? `, and ${models.length - 12} more` : ''})`;
}

/** A numbered list of the server's models; the answer is a number or a name. */
async function pickModel(rl: Prompt, models: string[]): Promise<string> {
  if (models.length) {
    process.stderr.write(`the server has ${models.length} ${models.length === 1 ? 'model' : 'models'}:\n`);
    for (const [i, m] of models.entries())
      process.stderr.write(`  ${String(i + 1).padStart(2)}) ${inertLine(m)}\n`);
  }
  for (;;) {
    const answer = (
      await rl.question(models.length ? `model (number or name) ${dim('[1]')}: ` : 'model name: ')
    ).trim();
    const picked = answer === '' ? models[0] : /^\d+$/.test(answer) ? models[Number(answer) - 1] : answer;
    if (picked) {
      if (models.length && !listed(models, picked))
        process.stderr.write(dim(`the server does not list "${inertLine(picked)}"; writing it anyway\n`));
      return picked;
    }
    process.stderr.write(`  give a number from 1 to ${models.length}, or a model name\n`);
  }
}
