/** `keel doctor`: is the model endpoint usable for keel? Reachable, model present, tool calling, context window. */
import { systemPrompt } from '../agent/prompt.js';
import { createModelClient } from '../model/create.js';
import { recoverToolCalls } from '../model/text-tool-calls.js';
import { ESTIMATE_MARGIN } from '../model/tokens.js';
import { ModelError, type ToolCall } from '../model/types.js';
import { modeAllows } from '../policy/modes.js';
import { EXIT } from '../term/exit-codes.js';
import { inertLine } from '../term/inert.js';
import { type CommonFlags, ConfigError, load } from '../term/options.js';
import { builtinTools } from '../tools/builtin.js';
import { toolSpec } from '../tools/registry.js';
import { checkMcpServers } from './doctor-mcp.js';
import { dim, red } from './render.js';

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail' | 'skip';
  detail: string;
  /** For `limits`: how each limit is enforced (`cgroup v2`, `rlimit`, `docker`, `none`...). */
  mechanisms?: Record<string, string>;
  /** More to read under the line (for `sandbox`: what a command sees and what is hidden). */
  more?: string;
}

const MARK: Record<Check['status'], string> = { ok: '✓', warn: '!', fail: '✗', skip: '-' };
/** Where a check's text starts: after its mark and its padded name. */
const INDENT = ' '.repeat(2 + 16 + 1);

/**
 * The checks so far. Each is printed as it is added (a slow model must not leave a blank screen);
 * with --json they are printed once, as one document, at the end.
 */
class Checks extends Array<Check> {
  json = false;

  override push(...checks: Check[]): number {
    if (!this.json) for (const c of checks) printCheck(c);
    return super.push(...checks);
  }
}

/** One check for a person: the mark, the name, the text wrapped to the terminal under its own start. */
function printCheck(c: Check): void {
  // details quote the server: its model names, its errors, the model's own answer
  const width = Math.max(60, Math.min(process.stdout.columns ?? 100, 120)) - INDENT.length;
  const lines = [...wrap(inertLine(c.detail), width), ...(c.more ? wrap(inertLine(c.more), width) : [])];
  const text = `${MARK[c.status]} ${c.name.padEnd(16)} ${lines.join(`\n${INDENT}`)}\n`;
  process.stdout.write(c.status === 'fail' ? red(text) : c.status === 'ok' ? text : dim(text));
}

/** A text cut into lines of at most `width` characters, at spaces where there are some. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let rest = text;
  while (rest.length > width) {
    const space = rest.lastIndexOf(' ', width);
    const cut = space > width / 2 ? space : width;
    lines.push(rest.slice(0, cut));
    rest = rest.slice(cut).trimStart();
  }
  lines.push(rest);
  return lines;
}

/** Run the checks, print them, and exit 0 when keel can work with this setup. */
export async function runDoctor(flags: CommonFlags & { moveTags?: boolean }): Promise<number> {
  const checks = new Checks();
  checks.json = flags.json === true;
  let exit: number = EXIT.ok;
  // every line is out already; --json says it all at the end
  const print = () => {
    if (!flags.json) return;
    // a failing doctor carries the shared error fields too: the first failed check is the error
    const failed = checks.find((c) => c.status === 'fail');
    const error = failed ? { code: codeOf(exit), error: `${failed.name}: ${failed.detail}` } : {};
    const list = [...checks];
    process.stdout.write(
      `${JSON.stringify({ ok: exit === EXIT.ok, exit_code: exit, ...error, checks: list }, null, 2)}\n`,
    );
  };

  let setup: ReturnType<typeof load>;
  try {
    setup = load(flags);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    checks.push({ name: 'config', status: 'fail', detail: err.message });
    exit = EXIT.usage;
    print();
    return exit;
  }
  const { config } = setup.loaded;
  let client: ReturnType<typeof createModelClient> | undefined;
  try {
    client = createModelClient(config, process.env, { cwd: setup.cwd });
    checks.push({
      name: 'config',
      status: 'ok',
      detail: `${config.provider} ${config.model || '(scripted)'} at ${config.base_url}`,
    });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    checks.push({ name: 'config', status: 'fail', detail: err.message });
    exit = EXIT.usage;
  }
  for (const warning of setup.loaded.warnings)
    checks.push({ name: 'trust', status: 'warn', detail: warning });
  // the sandbox needs no model: a first-time user learns what shell commands would get before configuring one
  for (const check of await checkSandbox(setup.cwd, config)) {
    checks.push(check);
    if (check.status === 'fail' && exit === EXIT.ok) exit = EXIT.environment;
  }
  checks.push(await checkGit());
  const tags = await checkLegacyTags(setup.cwd, flags.moveTags === true);
  if (tags) checks.push(tags);
  checks.push(...(await checkMcpServers(setup.cwd, setup.loaded)));
  checks.push(await checkMemoryEmbedder(config));
  if (!client) {
    print();
    return exit;
  }

  const { provider, model } = client.primary;
  if (provider.listModels) {
    try {
      const models = await provider.listModels(AbortSignal.timeout(config.timeouts.connect_s * 1000));
      checks.push({
        name: 'endpoint',
        status: 'ok',
        detail: `${provider.baseUrl} answers (${models.length} model${models.length === 1 ? '' : 's'})`,
      });
      const present = models.some(
        (m) => m === model || m === `${model}:latest` || m.replace(/:latest$/, '') === model,
      );
      checks.push(
        present
          ? { name: 'model', status: 'ok', detail: `${model} is available` }
          : {
              name: 'model',
              status: 'fail',
              detail: `${model} is not among the server's models: ${models.slice(0, 8).join(', ') || '(none)'}`,
            },
      );
      if (!present) {
        // asking an absent model to call a tool only repeats the failure
        checks.push({ name: 'tool calling', status: 'skip', detail: 'needs the model' });
        // the server is up but has no such model: a model error, as a request to it would end (DESIGN's exit 4)
        exit = EXIT.model;
        print();
        return exit;
      }
    } catch (err) {
      const message = err instanceof ModelError ? err.message : (err as Error).message;
      checks.push({ name: 'endpoint', status: 'fail', detail: message });
      exit = EXIT.model;
      print();
      return exit;
    }
  } else {
    checks.push({ name: 'endpoint', status: 'skip', detail: `${provider.name} cannot list models` });
  }

  checks.push(await checkToolCalling(client, config.timeouts.first_token_s));
  const last = checks.at(-1);
  if (last?.status === 'fail') exit = last.detail.startsWith('request failed') ? EXIT.model : EXIT.failed;

  checks.push(await checkContextWindow(client, config.timeouts.connect_s));
  print();
  return exit;
}

/**
 * Which sandbox shell commands get here, proven (a write outside the scope and a network call must both
 * fail), and how its resource limits are enforced (cgroup, rlimit via prlimit, docker, or not at all).
 */
async function checkSandbox(
  cwd: string,
  config: ReturnType<typeof load>['loaded']['config'],
): Promise<Check[]> {
  const { createSandbox, proveSandbox } = await import('../policy/sandbox.js');
  const { formatLimits } = await import('../policy/sandbox-limits.js');
  const { Scope } = await import('../policy/scope.js');
  const scope = new Scope({ root: cwd, writable: config.scope });
  let sandbox: Awaited<ReturnType<typeof createSandbox>>;
  try {
    sandbox = await createSandbox({
      kind: config.sandbox,
      root: scope.root,
      writable: scope.writable,
      network: config.sandbox_network,
      passEnv: config.sandbox_env,
      limits: config.sandbox_limits,
    });
  } catch (err) {
    return [{ name: 'sandbox', status: 'fail', detail: (err as Error).message }];
  }
  try {
    const report = sandbox.limits();
    const unenforced = Object.values(report).some((l) => l.mechanism === 'none');
    const limits: Check = {
      name: 'limits',
      status: unenforced ? 'warn' : 'ok',
      detail: formatLimits(report),
      mechanisms: Object.fromEntries(Object.entries(report).map(([k, l]) => [k, l.mechanism])),
    };
    if (sandbox.kind === 'none') {
      const how = config.allow_shell
        ? 'shell runs unsandboxed (allow_shell = true)'
        : 'shell is denied unless allow_shell = true or a PreToolUse hook with approver = true names shell';
      return [{ name: 'sandbox', status: 'warn', detail: `none: ${sandbox.describe()}; ${how}` }, limits];
    }
    const proof = await proveSandbox(sandbox);
    const proven = proof.writeOutsideBlocked && (proof.networkBlocked || config.sandbox_network);
    const tried = config.sandbox_network
      ? 'a write outside the scope was stopped (the network is allowed: sandbox_network = true)'
      : 'a write outside the scope and a network call were both stopped';
    return [
      {
        name: 'sandbox',
        status: proven ? 'ok' : 'fail',
        // the proof in a few words (all of it when it failed), then what a command sees and what is hidden
        detail: proven ? `${sandbox.kind}, proven: ${tried}` : proof.detail,
        // the limits have their own line
        more: sandbox.describe().replace(`limits: ${limits.detail}; `, ''),
      },
      limits,
    ];
  } finally {
    await sandbox.close();
  }
}

/**
 * Which embedder memory search uses: the offline one, or the endpoint `memory.embedding_model` names
 * (Ollama's `/api/embed` or an OpenAI-compatible `/embeddings`), asked for one vector to prove it answers.
 * A failing endpoint is a warning: memory search falls back to the offline embedder.
 */
async function checkMemoryEmbedder(config: ReturnType<typeof load>['loaded']['config']): Promise<Check> {
  const { embeddingSettings } = await import('../memory/memory.js');
  const { embedUrl, endpointEmbed } = await import('../memory/embed.js');
  const settings = embeddingSettings(config, process.env);
  if (!settings)
    return {
      name: 'memory',
      status: 'ok',
      detail: 'offline embedder (memory.embedding_model names a model on the server to use instead)',
    };
  const url = embedUrl(settings);
  const api = settings.provider === 'ollama' ? 'Ollama /api/embed' : 'OpenAI-compatible /embeddings';
  try {
    const [vector] = await endpointEmbed(['keel doctor'], settings);
    return {
      name: 'memory',
      status: 'ok',
      detail: `${settings.model} on ${api} at ${url} (${vector?.length ?? 0} dimensions)`,
    };
  } catch (err) {
    return {
      name: 'memory',
      status: 'warn',
      detail: `${settings.model} on ${api} at ${url} failed (${(err as Error).message}); memory search uses the offline embedder`,
    };
  }
}

/**
 * The window the server runs the model with, and how keel counts a request against it. Its own
 * timeout: the tool-calling check before it may have taken all of another.
 */
async function checkContextWindow(
  client: ReturnType<typeof createModelClient>,
  timeoutS: number,
): Promise<Check> {
  const signal = AbortSignal.timeout(timeoutS * 1000);
  const window = await client.contextWindowFrom(signal).catch(() => undefined);
  const sample = [{ role: 'user' as const, content: 'What is the first line of README.md?' }];
  const count = await client.countRequestTokens(sample, [], AbortSignal.timeout(timeoutS * 1000));
  const counting =
    count.by === 'server'
      ? "tokens counted by the server's /tokenize"
      : `tokens estimated with a ${Math.round(ESTIMATE_MARGIN * 100)}% margin (the server has no /tokenize)`;
  if (!window)
    return {
      name: 'context window',
      status: 'warn',
      detail: `unknown: set context_window in config so keel can budget the prompt; ${counting}`,
    };
  const from = window.source === 'configured' ? 'configured' : `from ${window.source}`;
  return { name: 'context window', status: 'ok', detail: `${window.tokens} tokens (${from}); ${counting}` };
}

/** The terminal code an exit status of the doctor stands for. */
function codeOf(exit: number): string {
  if (exit === EXIT.usage) return 'CONFIG_ERROR';
  if (exit === EXIT.environment) return 'ENVIRONMENT_ERROR';
  if (exit === EXIT.model) return 'MODEL_ERROR';
  return 'FAILED';
}

/** Ask the model to read a file, with keel's real prompt and tools, and see whether it calls the tool. */
async function checkToolCalling(
  client: ReturnType<typeof createModelClient>,
  timeoutS: number,
): Promise<Check> {
  const tools = builtinTools().filter((t) => modeAllows('ask', t.effect));
  const request = {
    messages: [
      {
        role: 'system' as const,
        content: systemPrompt({ mode: 'ask', root: '/work/project', instructions: '' }),
      },
      { role: 'user' as const, content: 'What is the first line of README.md?' },
    ],
    tools: tools.map(toolSpec),
  };
  const calls: ToolCall[] = [];
  let text = '';
  try {
    for await (const delta of client.stream(request, AbortSignal.timeout(timeoutS * 1000 * 2), {})) {
      if (delta.type === 'tool_call') calls.push(delta.call);
      if (delta.type === 'text') text += delta.text;
    }
  } catch (err) {
    return { name: 'tool calling', status: 'fail', detail: `request failed: ${(err as Error).message}` };
  }
  if (calls.some((c) => c.name === 'read_file')) {
    return { name: 'tool calling', status: 'ok', detail: 'the model called read_file natively' };
  }
  // a model that looks around first (list_dir, grep) before reading is calling tools as it should
  if (calls.length > 0) {
    const names = [...new Set(calls.map((c) => c.name))].join(', ');
    return { name: 'tool calling', status: 'ok', detail: `the model called ${names} natively` };
  }
  const recovered = recoverToolCalls(
    text,
    tools.map((t) => t.name),
  );
  if (recovered.calls.some((c) => c.name === 'read_file')) {
    return {
      name: 'tool calling',
      status: 'warn',
      detail: 'the model wrote the call as text; keel recovers it, but native tool calling is more reliable',
    };
  }
  const said = text.trim().slice(0, 80);
  return {
    name: 'tool calling',
    status: 'fail',
    detail: `the model did not call read_file${calls.length ? ` (it called ${calls.map((c) => c.name).join(', ')})` : ''}${said ? `; it said: "${said}"` : ''}`,
  };
}

/**
 * Older keel marked HEAD with `keel-pre/…` tags among the user's own (`git describe` answered with them,
 * `git push --tags` would publish them); keel now keeps them under refs/keel/pre/. Offer to move them.
 */
async function checkLegacyTags(cwd: string, move: boolean): Promise<Check | undefined> {
  const { findRepo } = await import('../policy/git.js');
  const repo = findRepo(cwd);
  if (!repo) return undefined;
  const { legacyPreTags, moveLegacyPreTags } = await import('../policy/safety-net.js');
  const tags = legacyPreTags(repo);
  if (!tags.length) return undefined;
  const n = `${tags.length} keel-pre/ tag${tags.length === 1 ? '' : 's'}`;
  if (move) {
    moveLegacyPreTags(repo);
    return { name: 'safety net', status: 'ok', detail: `moved ${n} from your tags to refs/keel/pre/` };
  }
  return {
    name: 'safety net',
    status: 'warn',
    detail: `${n} from an older keel sit among your tags (git describe and git push --tags see them); keel doctor --move-tags moves them to refs/keel/pre/ (keel undo finds them either way)`,
  };
}

/** git: keel's safety net, review, loop and fix need it; without it, say so instead of "not a repository". */
async function checkGit(): Promise<Check> {
  const { execFileSync } = await import('node:child_process');
  try {
    const version = execFileSync('git', ['--version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return { name: 'git', status: 'ok', detail: version.trim().replace(/^git version /, 'git ') };
  } catch {
    return {
      name: 'git',
      status: 'warn',
      detail:
        'git is not installed (not found on PATH): no snapshots for keel undo; keel fix, loop and review need it',
    };
  }
}
