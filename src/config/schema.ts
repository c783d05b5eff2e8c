/**
 * The config schema: every key keel reads, its type and its default. Unknown keys are errors.
 * `[profiles.NAME]` tables are read by the loader, not here: each holds keys of this schema.
 */
import * as z from 'zod';
import { APPROVALS } from './approvals.js';

export const MODES = ['ask', 'plan', 'edit', 'auto'] as const;
export type Mode = (typeof MODES)[number];

export const PROVIDERS = ['openai', 'ollama', 'scripted'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

const positiveInt = z.number().int().positive();
const positive = z.number().positive();

/** A server URL with its scheme: "127.0.0.1:8000/v1" would otherwise fail late, as a model error after retries. */
const serverUrl = z.string().superRefine((value, ctx) => {
  let ok = false;
  try {
    const { protocol, hostname } = new URL(value);
    ok = (protocol === 'http:' || protocol === 'https:') && hostname !== '';
  } catch {
    // not a URL at all
  }
  if (!ok)
    ctx.addIssue({
      code: 'custom',
      message: `expected a URL with http:// or https:// (such as http://127.0.0.1:8000/v1), got ${JSON.stringify(value)}`,
    });
});

export const modelRefSchema = z.strictObject({
  provider: z.enum(PROVIDERS).optional(),
  model: z.string().min(1),
  base_url: serverUrl.optional(),
  api_key_env: z.string().optional(),
  context_window: positiveInt.optional(),
});
export type ModelRef = z.infer<typeof modelRefSchema>;

export const priceSchema = z
  .strictObject({
    /** USD per million input tokens. */
    input_per_mtok: z.number().nonnegative().optional(),
    /** USD per million output tokens. */
    output_per_mtok: z.number().nonnegative().optional(),
    /** USD per second of a call: a model on your own hardware, priced by the time it holds the GPU. */
    gpu_second: z.number().nonnegative().optional(),
  })
  .superRefine((price, ctx) => priceIssue(price, '', ctx));

/** A price is input_per_mtok with output_per_mtok, or gpu_second alone. */
function priceIssue(
  price: { input_per_mtok?: number; output_per_mtok?: number; gpu_second?: number },
  who: string,
  ctx: z.RefinementCtx,
): void {
  const perToken = [price.input_per_mtok, price.output_per_mtok].filter((v) => v !== undefined).length;
  if (perToken === 0 && price.gpu_second === undefined && who === '')
    ctx.addIssue({ code: 'custom', message: 'expected input_per_mtok and output_per_mtok, or gpu_second' });
  if (perToken === 1)
    ctx.addIssue({ code: 'custom', message: `${who}input_per_mtok and output_per_mtok go together` });
  if (perToken > 0 && price.gpu_second !== undefined)
    ctx.addIssue({ code: 'custom', message: `${who}a price per token or gpu_second, not both` });
}

const variableName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a variable name (letters, digits and _)');

/**
 * One tier of `[[routing.tiers]]` (src/model/routing.ts): a model a fix's calls may be routed to by
 * their difficulty. Tiers are listed cheapest first. A tier without `base_url`, `api_key_env` or
 * `provider` uses the top-level one. Its price is keel's pricing keys: per million tokens, or
 * `gpu_second` (USD per second of a call) for a model on your own hardware.
 */
export const tierSchema = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9_-]+$/, 'must be lowercase letters, digits, _ or -'),
    provider: z.enum(PROVIDERS).optional(),
    model: z.string().min(1),
    base_url: serverUrl.optional(),
    /** Name of the variable holding this tier's API key (never the key itself). */
    api_key_env: variableName.optional(),
    context_window: positiveInt.optional(),
    input_per_mtok: z.number().nonnegative().optional(),
    output_per_mtok: z.number().nonnegative().optional(),
    gpu_second: z.number().nonnegative().optional(),
  })
  .superRefine((tier, ctx) => priceIssue(tier, `tier "${tier.name}": `, ctx));
export type TierConfig = z.infer<typeof tierSchema>;

/** What one call of a tier costs per million input plus output tokens, for the order check (undefined: not priced by token). */
function tokenPrice(tier: TierConfig): number | undefined {
  return tier.input_per_mtok === undefined || tier.output_per_mtok === undefined
    ? undefined
    : tier.input_per_mtok + tier.output_per_mtok;
}

export const routingSchema = z
  .strictObject({
    /** Cheapest first, strongest last; none: every call goes to the top-level model. */
    tiers: z.array(tierSchema).default([]),
  })
  .superRefine(({ tiers }, ctx) => {
    const seen = new Set<string>();
    let before: TierConfig | undefined;
    for (const [i, tier] of tiers.entries()) {
      if (seen.has(tier.name))
        ctx.addIssue({ code: 'custom', path: ['tiers', i], message: `tier "${tier.name}" is listed twice` });
      seen.add(tier.name);
      const price = tokenPrice(tier);
      if (price === undefined) continue;
      const last = before && tokenPrice(before);
      if (before && last !== undefined && price < last)
        ctx.addIssue({
          code: 'custom',
          path: ['tiers', i],
          message: `tier "${tier.name}" costs less than "${before.name}" before it: list tiers cheapest first, strongest last`,
        });
      before = tier;
    }
  });

export const hookSchema = z.strictObject({
  event: z.enum(['PreToolUse', 'PostToolUse', 'UserPromptSubmit', 'SessionStart', 'Stop']),
  /** Regex on the tool name (whole name); absent matches every tool. */
  matcher: z.string().optional(),
  /** argv array: never a shell string. */
  command: z.array(z.string().min(1)).min(1),
  timeout_s: positive.default(10),
  /**
   * A PreToolUse hook that reviews commands: with a matcher that names `shell` (or `run_tests`),
   * its allow lets that tool run when there is no sandbox.
   */
  approver: z.boolean().default(false),
});

/** An MCP server whose tools the session offers as `mcp__<name>__<tool>` (src/tools/mcp.ts). */
export const mcpServerSchema = z
  .strictObject({
    /** Part of every tool name, so letters, digits, `_` and `-` only. */
    name: z.string().regex(/^[a-z0-9_-]+$/, 'must be lowercase letters, digits, _ or -'),
    /** argv of a stdio server, never a shell string. */
    command: z.array(z.string().min(1)).min(1).optional(),
    /** A Streamable HTTP server. */
    url: serverUrl.optional(),
    /** Name of the variable holding the bearer token for `url` (never the token itself). */
    bearer_token_env: z.string().min(1).optional(),
    /** More variables for a stdio server, name = value. */
    env: z.record(z.string(), z.string()).default({}),
    /** Tools that only read (effect read, offered in ask mode); `["*"]`: all of them. Others are exec. */
    read_only_tools: z.array(z.string().min(1)).default([]),
    startup_timeout_s: positive.default(10),
    tool_timeout_s: positive.default(60),
    /** `"always"`: its tools are offered from the first request; by default the model activates them (`tools`). */
    offer: z.enum(['on_demand', 'always']).default('on_demand'),
    /**
     * `"none"`: a stdio server runs as the user, outside the sandbox. Only the user's own config may say
     * so; a project config that does is a ConfigError, trusted or not (load.ts).
     */
    sandbox: z.literal('none').optional(),
  })
  .superRefine((server, ctx) => {
    if ((server.command === undefined) === (server.url === undefined))
      ctx.addIssue({
        code: 'custom',
        message: `mcp server "${server.name}" needs exactly one of command or url`,
      });
    if (server.bearer_token_env !== undefined && server.url === undefined)
      ctx.addIssue({
        code: 'custom',
        message: `mcp server "${server.name}": bearer_token_env goes with url only`,
      });
    if (server.sandbox !== undefined && server.url !== undefined)
      ctx.addIssue({
        code: 'custom',
        message: `mcp server "${server.name}": sandbox goes with command only`,
      });
  });
export type McpServerConfig = z.infer<typeof mcpServerSchema>;
/** A remote Agent2Agent agent the session can delegate to as the tool `a2a__<name>` (src/tools/a2a.ts). */
export const a2aAgentSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9_-]+$/, 'must be lower-case letters, digits, _ and -'),
  /** The agent card's URL (such as http://127.0.0.1:7430/.well-known/agent-card.json). */
  card_url: serverUrl,
  /** Name of the environment variable holding the agent's bearer token (never the token itself). */
  token_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a variable name (letters, digits and _)')
    .optional(),
  /** How long one call waits for the agent's task to end. */
  timeout_s: positive.default(300),
});

export const SANDBOXES = ['auto', 'bwrap', 'docker', 'none'] as const;
export type SandboxKind = (typeof SANDBOXES)[number];

export const configSchema = z.strictObject({
  /** The profile in force: `[profiles.NAME]` values of every config file, over their top level. */
  profile: z.string().min(1).optional(),
  provider: z.enum(PROVIDERS).default('openai'),
  model: z.string().default(''),
  base_url: serverUrl.default('http://127.0.0.1:11434/v1'),
  /** Name of the environment variable holding the API key (never the key itself). */
  api_key_env: z.string().default('OPENAI_API_KEY'),
  context_window: positiveInt.optional(),
  /** The mode `keel` uses when no verb picks one. */
  permission: z.enum(MODES).default('ask'),
  /** Writable paths, relative to the workspace root. */
  scope: z.array(z.string().min(1)).default(['.']),
  test_command: z.string().optional(),
  allow_shell: z.boolean().default(false),
  /**
   * Commands keel runs without its `approvals` question (src/policy/command-rules.ts): `npm test` is that
   * command, alone or with more plain arguments. Never wider than mode, scope and sandbox: still sandboxed.
   */
  allow_commands: z.array(z.string().trim().min(1)).default([]),
  /** Commands the gate always denies: `git push` is any git push, wherever it sits in a command line. */
  deny_commands: z.array(z.string().trim().min(1)).default([]),
  /** When keel asks a person before a call (src/policy/approvals.ts); unset: shell outside the sandbox. */
  approvals: z.enum(APPROVALS).optional(),
  hooks: z.array(hookSchema).default([]),
  /** MCP servers whose tools sessions offer; a project config's need trust (they run programs). */
  mcp_servers: z
    .array(mcpServerSchema)
    .default([])
    .superRefine((servers, ctx) => {
      const seen = new Set<string>();
      for (const { name } of servers) {
        if (seen.has(name)) ctx.addIssue({ code: 'custom', message: `mcp server "${name}" is listed twice` });
        seen.add(name);
      }
    }),
  /** Remote A2A agents offered as tools; a project config needs trust to add one. */
  a2a_agents: z.array(a2aAgentSchema).default([]),
  /** Where shell commands run: a sandbox, or none (then shell needs allow_shell or an approver hook naming it). */
  sandbox: z.enum(SANDBOXES).default('auto'),
  sandbox_network: z.boolean().default(false),
  /** More of keel's environment variables for sandboxed commands, by name; a project config needs trust to add one. */
  sandbox_env: z
    .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a variable name (letters, digits and _)'))
    .default([]),
  sandbox_limits: z
    .strictObject({
      cpu_s: positiveInt.default(300),
      memory_mb: positiveInt.default(4096),
      processes: positiveInt.default(256),
      file_size_mb: positiveInt.default(1024),
      output_kb: positiveInt.default(1024),
    })
    .prefault({}),
  /** Commit the session's own files when it ends COMPLETED. */
  auto_commit: z.boolean().default(false),
  /** End the run with SCOPE_VIOLATION on a denied path, instead of telling the model and going on. */
  stop_on_violation: z.boolean().default(false),
  /** Path of a script for the scripted provider (tests and the offline demo). */
  script: z.string().optional(),
  budgets: z
    .strictObject({
      max_rounds: positiveInt.default(40),
      max_tokens: positiveInt.optional(),
      max_cost_usd: positive.optional(),
      max_wall_s: positive.optional(),
      max_diff_lines: positiveInt.optional(),
    })
    .prefault({}),
  /** Older turns become a summary when a request would pass `threshold` of the context window; `keep` of it stays verbatim. */
  compaction: z
    .strictObject({
      threshold: z.number().gt(0).max(1).default(0.8),
      keep: z.number().gt(0).lt(1).default(0.3),
    })
    .prefault({}),
  /** Subagents (spawn_agent): how many run at once, and how deep they nest (0: no subagent tools at all). */
  agents: z
    .strictObject({
      max_running: positiveInt.default(4),
      max_depth: z.number().int().min(0).default(2),
    })
    .prefault({}),
  /** The code graph (src/graph/): the repo map's token budget at session start; 0 sends none. */
  graph: z
    .strictObject({
      map_tokens: z.number().int().nonnegative().default(1000),
    })
    .prefault({}),
  /** The same tool call (name and arguments) repeated this many times ends the run. */
  loop_threshold: positiveInt.default(3),
  fallback_models: z.array(modelRefSchema).default([]),
  /** Models for other jobs than the agent's own; `review` judges each passing round of `keel loop`. */
  roles: z.strictObject({ review: modelRefSchema.optional() }).prefault({}),
  timeouts: z
    .strictObject({
      connect_s: positive.default(10),
      first_token_s: positive.default(120),
      idle_s: positive.default(60),
    })
    .prefault({}),
  retries: z
    .strictObject({
      max: z.number().int().nonnegative().default(3),
      base_delay_ms: z.number().int().nonnegative().default(500),
      max_delay_ms: z.number().int().nonnegative().default(30_000),
      /** How long a failed model sits out before the chain tries it again. */
      cooldown_s: z.number().nonnegative().default(60),
    })
    .prefault({}),
  pricing: z.record(z.string(), priceSchema).default({}),
  /** Routing a fix's calls by difficulty (src/model/routing.ts); a project config needs trust to set it. */
  routing: routingSchema.prefault({}),
  /** Memory across sessions (src/memory/): how much is injected at session start, and who embeds. */
  memory: z
    .strictObject({
      /** Tokens of memories put in the system prompt at session start; 0 turns injection off. */
      inject_tokens: z.number().int().nonnegative().default(600),
      /** An embedding model on the configured endpoint; unset, vectors come from the offline embedder. */
      embedding_model: z.string().min(1).optional(),
    })
    .prefault({}),
  max_output_tokens: positiveInt.optional(),
  temperature: z.number().min(0).max(2).optional(),
  /**
   * Where the run queue and the ledger live (src/store/engine.ts): "sqlite" (KEEL_HOME/keel.db) or a
   * postgres:// URL a team shares. Only the user's own config or KEEL_STORE may set it (load.ts).
   */
  store: z
    .string()
    .refine((v) => v === 'sqlite' || /^postgres(ql)?:\/\/./.test(v), {
      message: 'expected "sqlite" or a postgres://user@host/db URL',
    })
    .default('sqlite'),
  /**
   * The hub project (`keel hub`) in that store whose agents, messages and workflow runs `keel serve`
   * shows; unset, the page shows no hub. Only the user's own config may set it (load.ts).
   */
  hub_project: z.string().min(1).max(64).optional(),
  /**
   * The audit key file hubs sharing a store seal workflow runs with (as KEEL_HUB_AUDIT_KEY_FILE, which wins):
   * whoever holds it can forge a run's evidence, so only the user's own config may name it (load.ts).
   */
  hub_audit_key_file: z
    .string()
    .max(4096)
    // a relative path would be read in whichever folder keel runs: a repository could hold the key
    .refine(
      (p) => p.startsWith('/'),
      'must be an absolute path (a relative one would be read in the workspace)',
    )
    .optional(),
});

export type Config = z.infer<typeof configSchema>;

/** A `[profiles.NAME]` table: any config key but `profile`, since a profile cannot choose another. */
export const profileSchema = configSchema.omit({ profile: true });

/** The keys a config table accepts at a dotted path (`[]` the top level, `['budgets']`, `['hooks', '0']`). */
export function keysAt(path: readonly string[]): string[] {
  let node: unknown = configSchema;
  for (const segment of ['', ...path]) {
    node = unwrap(node);
    if (segment === '') continue;
    const def = defOf(node);
    if (def?.type === 'object') node = (def.shape as Record<string, unknown>)[segment];
    else if (def?.type === 'array') node = def.element;
    else if (def?.type === 'record') node = def.valueType;
    else return [];
  }
  const def = defOf(unwrap(node));
  return def?.type === 'object' ? Object.keys(def.shape as object) : [];
}

/** Every dotted key of the schema, nested tables too (`budgets.max_rounds`), for did-you-mean across tables. */
export function allKeys(): string[] {
  const out: string[] = [];
  const walk = (path: string[]) => {
    for (const key of keysAt(path)) {
      out.push([...path, key].join('.'));
      walk([...path, key]);
    }
  };
  walk([]);
  return out;
}

interface Def {
  type: string;
  [k: string]: unknown;
}

function defOf(node: unknown): Def | undefined {
  return (node as { _zod?: { def?: Def } } | undefined)?._zod?.def;
}

/** Through optional, default and prefault wrappers to the schema they hold. */
function unwrap(node: unknown): unknown {
  let current = node;
  for (let def = defOf(current); def && 'innerType' in def; def = defOf(current)) current = def.innerType;
  return current;
}
