/**
 * One connection to a configured MCP server: a stdio child (confined when the caller says so) or a
 * Streamable HTTP endpoint. It remembers why it broke (exit, garbage on the wire) so a failed call can
 * say so in one line.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../config/schema.js';
import { GroupStdioTransport } from './mcp-stdio.js';

/** How a stdio server is spawned: argv, environment and folder (already wrapped in the sandbox, or not). */
export interface SpawnPlan {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  /** Runs once the child is gone (a sandbox's cgroups). */
  cleanup?(): Promise<void>;
}

/** A server that cannot be reached or used; its message names the server. */
export class McpServerError extends Error {
  override name = 'McpServerError';
}

const STDERR_TAIL = 4000;

/** A live client with what went wrong on it, if anything. */
export class McpConnection {
  /** Set once the transport closed: the server exited or hung up. */
  closed = false;
  /** The last protocol error (a line that is not JSON-RPC, a message that fails the schema). */
  lastError: Error | undefined;
  private stderrTail = '';
  private readonly listeners = new Set<(err: Error) => void>();

  private constructor(
    readonly server: McpServerConfig,
    readonly client: Client,
    private readonly transport: Transport,
    private readonly cleanup: (() => Promise<void>) | undefined,
  ) {}

  /** Connect and initialize within the server's startup timeout; throws McpServerError. */
  static async open(
    server: McpServerConfig,
    plan: SpawnPlan | { url: string; token?: string },
  ): Promise<McpConnection> {
    const client = new Client({ name: 'keel', version: '1' });
    let transport: Transport;
    let cleanup: (() => Promise<void>) | undefined;
    if ('url' in plan) {
      transport = new StreamableHTTPClientTransport(new URL(plan.url), {
        ...(plan.token ? { requestInit: { headers: { Authorization: `Bearer ${plan.token}` } } } : {}),
      });
    } else {
      const [command, ...args] = plan.argv;
      if (!command) throw new McpServerError(`mcp server "${server.name}" has an empty command`);
      transport = new GroupStdioTransport({ command, args, env: plan.env, cwd: plan.cwd });
      cleanup = plan.cleanup;
    }
    const conn = new McpConnection(server, client, transport, cleanup);
    client.onclose = () => {
      conn.closed = true;
      conn.fail(new McpServerError(conn.crashMessage()));
    };
    client.onerror = (err) => {
      conn.lastError = err;
      // on stdio every error is a line that is not JSON-RPC: the server is broken, and the call waiting
      // on it would only time out (over HTTP the request itself fails, and a side stream's error is no answer)
      if (transport instanceof GroupStdioTransport)
        conn.fail(
          new McpServerError(`mcp server "${server.name}" returned garbage: ${oneLine(err.message)}`),
        );
    };
    if (transport instanceof GroupStdioTransport)
      transport.stderr.on('data', (chunk: Buffer) => {
        conn.stderrTail = (conn.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
      });
    try {
      await client.connect(transport, { timeout: server.startup_timeout_s * 1000 });
    } catch (err) {
      // a child that died says why on stderr; the SDK's own message is only "Connection closed"
      const exited = conn.closed && transport instanceof GroupStdioTransport;
      const tail = conn.stderrSummary();
      const how = transport instanceof GroupStdioTransport && transport.exit ? ` with ${transport.exit}` : '';
      const why = exited
        ? `it exited${how}${tail ? ` (stderr: ${tail})` : ''}`
        : oneLine((err as Error).message);
      await conn.close();
      throw new McpServerError(`mcp server "${server.name}" could not start: ${why}`);
    }
    return conn;
  }

  /** The pid of a stdio child (tests check it is gone after the session). */
  get pid(): number | undefined {
    return this.transport instanceof GroupStdioTransport ? this.transport.pid : undefined;
  }

  /** Run `request`, failing at once (not at its timeout) when the server crashes or speaks garbage meanwhile. */
  async guard<T>(request: Promise<T>): Promise<T> {
    // the losing request still settles later, and nobody waits for it
    request.catch(() => {});
    if (this.closed) throw new McpServerError(this.crashMessage());
    let listener: ((err: Error) => void) | undefined;
    const broken = new Promise<never>((_, reject) => {
      listener = reject;
      this.listeners.add(reject);
    });
    try {
      return await Promise.race([request, broken]);
    } finally {
      if (listener) this.listeners.delete(listener);
    }
  }

  /** What the child last said on stderr: its last line naming an error (a stack's head), else its last words. */
  private stderrSummary(): string {
    const lines = this.stderrTail
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    const error = lines.filter((l) => /error/i.test(l) && !/^at /.test(l)).pop();
    return oneLine(error ?? lines.slice(-3).join(' ')).slice(-300);
  }

  crashMessage(): string {
    const tail = this.stderrSummary();
    return `mcp server "${this.server.name}" crashed: the connection closed${tail ? ` (stderr: ${tail})` : ''}`;
  }

  private fail(err: Error): void {
    for (const reject of this.listeners) reject(err);
    this.listeners.clear();
  }

  /** End the client and its child; never throws. */
  async close(): Promise<void> {
    try {
      await this.client.close();
    } catch {
      // already gone
    }
    try {
      await this.transport.close();
    } catch {
      // already gone
    }
    await this.cleanup?.().catch(() => {});
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 300);
}
