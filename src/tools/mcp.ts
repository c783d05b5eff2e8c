/**
 * MCP servers as tools: each `[[mcp_servers]]` entry is connected at session start, its tools listed
 * within `startup_timeout_s` and offered as `mcp__<server>__<tool>` under the same gate as any tool. A
 * stdio server runs in the bwrap sandbox (workspace writable only in modes that write, its own program and
 * package bound read-only) unless all its tools are declared read-only or the user's config says
 * `sandbox = "none"`; with no sandbox it runs only when shell is opted in (allow_shell). A server an
 * installed plugin added runs in the bwrap sandbox whatever it declares, with the plugin's folder bound
 * read-only, and does not start where there is none. A
 * server that cannot start is skipped with a warning; every client is closed when the session ends.
 */
import { dirname } from 'node:path';
import { keelPaths, protectedStatePaths } from '../config/paths.js';
import { type PluginServer, pluginOf, pluginUnapproved } from '../config/plugins.js';
import { changedPrograms, type Program, programsOf } from '../config/programs.js';
import type { Config, McpServerConfig } from '../config/schema.js';
import type { Effect } from '../policy/effects.js';
import type { Policy } from '../policy/policy.js';
import type { Sandbox } from '../policy/sandbox.js';
import { McpConnection, McpServerError, type SpawnPlan } from './mcp-connect.js';
import { type ListedTool, mcpEffect, mcpTool, mcpToolName, shortDescription } from './mcp-tool.js';
import { offerAlways } from './registry.js';
import type { Tool, ToolFactory } from './types.js';

export { McpServerError } from './mcp-connect.js';

/** Where a server's process may run, decided once per session. */
interface Confinement {
  /** The bwrap sandbox for servers that are not all read-only; undefined when none can run here. */
  sandbox: Sandbox | undefined;
  /** Why there is none, for the warning. */
  why: string;
}

/** Everything connecting needs besides the server itself. */
export interface ConnectContext {
  config: Config;
  env: NodeJS.ProcessEnv;
  /** The workspace root; stdio servers start there. */
  root: string;
  /** Folders a sandboxed server may write (empty in modes that only read). */
  writable: string[];
  /** Run a server with no sandbox when none can run here (allow_shell). */
  allowUnsandboxed: boolean;
  /** The files in the workspace the config runs, as hashed at load: a server starts only while its own are unchanged. */
  programs?: readonly Program[];
  /** The servers installed plugins added (`LoadedConfig.pluginServers`): sandboxed always. */
  pluginServers?: readonly PluginServer[];
  confinement: () => Promise<Confinement>;
}

/** Whether every tool of the server is declared read-only (`read_only_tools = ["*"]`). */
export function allReadOnly(server: McpServerConfig): boolean {
  return server.read_only_tools.includes('*');
}

/** A lazily built bwrap sandbox shared by the session's servers, and a closer for it. */
export function confinementFor(
  config: Config,
  env: NodeJS.ProcessEnv,
  root: string,
  writable: string[],
  programs: readonly Program[] = [],
): { get: () => Promise<Confinement>; close: () => Promise<void> } {
  let made: Promise<Confinement> | undefined;
  const get = () => {
    made ??= (async (): Promise<Confinement> => {
      if (config.sandbox === 'none') return { sandbox: undefined, why: 'the config says sandbox = "none"' };
      if (config.sandbox === 'docker')
        return { sandbox: undefined, why: 'a docker sandbox cannot host a long-lived server' };
      const { createSandbox } = await import('../policy/sandbox.js');
      try {
        const sandbox = await createSandbox({
          kind: 'bwrap',
          root,
          writable,
          network: config.sandbox_network,
          limits: config.sandbox_limits,
          env,
          passEnv: config.sandbox_env,
          protectedDirs: protectedStatePaths(keelPaths(env)),
          protectedFiles: programs.map((p) => p.path),
        });
        return { sandbox, why: '' };
      } catch (err) {
        return { sandbox: undefined, why: (err as Error).message };
      }
    })();
    return made;
  };
  return {
    get,
    close: async () => {
      const c = await made;
      await c?.sandbox?.close();
    },
  };
}

/** How to reach a server: its URL and token, or the argv to spawn (confined or not); throws McpServerError. */
async function planFor(
  server: McpServerConfig,
  ctx: ConnectContext,
): Promise<SpawnPlan | { url: string; token?: string }> {
  if (server.url) {
    if (!server.bearer_token_env) return { url: server.url };
    const token = ctx.env[server.bearer_token_env];
    if (!token)
      throw new McpServerError(
        `mcp server "${server.name}": the variable ${server.bearer_token_env} (bearer_token_env) is not set`,
      );
    return { url: server.url, token };
  }
  const argv = server.command ?? [];
  const changed = changedPrograms(programsOf(argv, ctx.programs ?? []));
  if (changed.length)
    throw new McpServerError(
      `mcp server "${server.name}" was not started: ${changed.map((p) => p.name).join(', ')} changed since keel checked it (keel runs only the program it checked and you trusted)`,
    );
  const plugin = pluginOf(server, ctx.pluginServers ?? []);
  // a plugin's server starts only while the plugin's folder is still the one the person approved
  const unapproved = plugin && pluginUnapproved(dirname(plugin.dir), plugin.plugin);
  if (plugin && unapproved)
    throw new McpServerError(
      `mcp server "${server.name}" was not started: plugin ${plugin.plugin}: ${unapproved}; run \`keel plugin approve ${plugin.plugin}\` to review and approve it again`,
    );
  // the user's own config said so (a project config that does is refused at load); a plugin's server never
  if (!plugin && (server.sandbox === 'none' || allReadOnly(server))) return unconfined(server, argv, ctx);
  const { sandbox, why } = await ctx.confinement();
  if (plugin && !sandbox?.spawnSpec)
    throw new McpServerError(
      `mcp server "${server.name}" comes from plugin ${plugin.plugin} and runs only in the bwrap sandbox, which cannot run here (${why || `sandbox = "${ctx.config.sandbox}"`}); it was not started`,
    );
  if (sandbox?.spawnSpec) {
    if (!sandbox.network && usesNpx(argv))
      throw new McpServerError(
        `mcp server "${server.name}" runs ${argv[0]}, which fetches the package from the registry: the sandbox has no network (and keeps the npm cache of your home out); install the package (npm install -g PACKAGE) and name its command, or set sandbox = "none" on this server in your own config`,
      );
    // a plugin's server reads its own folder (hidden with the rest of keel's state otherwise), never writes it
    // its `env` is set inside the sandbox, never on bwrap and the wrappers that start it on the host
    const spec = sandbox.spawnSpec(argv, { show: plugin ? [plugin.dir] : [], env: server.env });
    return { argv: spec.argv, env: spec.env, cwd: spec.cwd, cleanup: spec.cleanup };
  }
  if (!ctx.allowUnsandboxed)
    throw new McpServerError(
      `mcp server "${server.name}" needs a sandbox and none can run here (${why}); set allow_shell = true to run it without one, or read_only_tools = ["*"] if it only reads`,
    );
  return unconfined(server, argv, ctx);
}

/** `npx ...`, `npm exec ...`, `pnpm dlx ...`: a command that downloads what it runs. */
function usesNpx(argv: string[]): boolean {
  const [command = '', sub] = argv;
  const name = command.split('/').pop() ?? '';
  return (
    name === 'npx' ||
    name === 'bunx' ||
    (name === 'npm' && (sub === 'exec' || sub === 'x')) ||
    (['pnpm', 'yarn'].includes(name) && sub === 'dlx')
  );
}

/**
 * A server that runs as the user (declared read-only, or allowed with no sandbox): without keel's secrets
 * in its environment, and in a cgroup of its own where the host has one, so that closing it ends every
 * process it started, even one it detached (no pid namespace does that here).
 */
async function unconfined(server: McpServerConfig, argv: string[], ctx: ConnectContext): Promise<SpawnPlan> {
  const { sandboxEnv } = await import('../policy/sandbox.js');
  const { inOwnCgroup } = await import('../policy/sandbox-limits.js');
  const grouped = inOwnCgroup(argv);
  return {
    argv: grouped.argv,
    env: { ...sandboxEnv(ctx.env, ctx.env.HOME, { pass: ctx.config.sandbox_env }), ...server.env },
    cwd: ctx.root,
    cleanup: grouped.cleanup,
  };
}

/** Connect to a server and list its tools, all within its startup timeout; throws McpServerError. */
export async function openServer(
  server: McpServerConfig,
  ctx: ConnectContext,
): Promise<{ conn: McpConnection; tools: ListedTool[] }> {
  const conn = await McpConnection.open(server, await planFor(server, ctx));
  try {
    const listed = await conn.guard(
      conn.client.listTools(undefined, { timeout: server.startup_timeout_s * 1000 }),
    );
    return { conn, tools: listed.tools as ListedTool[] };
  } catch (err) {
    await conn.close();
    if (err instanceof McpServerError) throw err;
    throw new McpServerError(
      `mcp server "${server.name}" could not list its tools: ${(err as Error).message}`,
    );
  }
}

/**
 * Start one server as a session in a mode that only reads would (the workspace read-only), list its tools
 * and stop it: `keel mcp list-tools` and `keel doctor`. Throws McpServerError saying why it did not start.
 */
export async function listServerTools(
  server: McpServerConfig,
  opts: {
    config: Config;
    env: NodeJS.ProcessEnv;
    root: string;
    programs: readonly Program[];
    pluginServers?: readonly PluginServer[];
  },
): Promise<ListedTool[]> {
  const confinement = confinementFor(opts.config, opts.env, opts.root, [], opts.programs);
  try {
    const { conn, tools } = await openServer(server, {
      config: opts.config,
      env: opts.env,
      root: opts.root,
      writable: [],
      allowUnsandboxed: opts.config.allow_shell,
      confinement: confinement.get,
      programs: opts.programs,
      pluginServers: opts.pluginServers ?? [],
    });
    await conn.close();
    return tools;
  } finally {
    await confinement.close();
  }
}

/** One row of `keel mcp list-tools`. */
export interface ToolRow {
  name: string;
  server_tool: string;
  effect: Effect;
  description: string;
}

/** The tools a server offers as keel names them; names keel cannot use are left out. */
export function toolRows(server: McpServerConfig, tools: ListedTool[]): ToolRow[] {
  return tools.flatMap((t) => {
    const name = mcpToolName(server.name, t.name);
    return name
      ? [
          {
            name,
            server_tool: t.name,
            effect: mcpEffect(server, t.name),
            description: shortDescription(t.description),
          },
        ]
      : [];
  });
}

/** The session's MCP tools; `warn` gets one line per server or tool left out (the face decides how to show it). */
export function mcpTools(warn: (line: string) => void): ToolFactory {
  return async (deps) => {
    const { config } = deps.loaded;
    if (config.mcp_servers.length === 0) return [];
    const policy: Policy = deps.policy;
    const writing = policy.mode === 'edit' || policy.mode === 'auto';
    const programs = deps.loaded.programs ?? [];
    const confinement = confinementFor(
      config,
      deps.env,
      policy.scope.root,
      writing ? [...policy.scope.writable] : [],
      programs,
    );
    const ctx: ConnectContext = {
      config,
      env: deps.env,
      root: policy.scope.root,
      writable: writing ? [...policy.scope.writable] : [],
      allowUnsandboxed: policy.allowShell,
      confinement: confinement.get,
      programs,
      pluginServers: deps.loaded.pluginServers ?? [],
    };
    // a mode that only reads offers no exec tool: a server with no read-only tool need not start at all
    const servers = config.mcp_servers.filter((s) => writing || s.read_only_tools.length > 0);
    const opened = await Promise.all(
      servers.map((server) =>
        openServer(server, ctx).catch((err: Error) => {
          warn(`${err.message}; its tools are left out`);
          return undefined;
        }),
      ),
    );
    const conns = opened.filter((o) => o !== undefined).map((o) => o.conn);
    deps.onClose?.(async () => {
      await Promise.all(conns.map((c) => c.close()));
      await confinement.close();
    });
    const tools = new Map<string, Tool>();
    for (const entry of opened) {
      if (!entry) continue;
      for (const listed of entry.tools) {
        const name = mcpToolName(entry.conn.server.name, listed.name);
        // a server listing one name twice must not end the session (the registry refuses duplicates)
        if (name && !tools.has(name)) {
          const tool = mcpTool(entry.conn, listed, name);
          // offered on demand through the catalogue unless the config asks for it from the first request
          tools.set(name, entry.conn.server.offer === 'always' ? offerAlways(tool) : tool);
        } else if (!name)
          warn(
            `mcp server "${entry.conn.server.name}": tool ${JSON.stringify(listed.name)} has a name keel cannot offer; left out`,
          );
      }
    }
    return [...tools.values()];
  };
}
