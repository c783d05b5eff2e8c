/**
 * The stdio transport to an MCP server, as the SDK's but with the server in a process group of its own:
 * closing ends the whole group, so a child the server started (a language server, a watcher) does not
 * outlive the session. A child that leaves the group (setsid) is ended by the caller's cgroup, where the
 * host has one (mcp.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** How long the server gets to exit after its stdin closes, and again after SIGTERM. */
const GRACE_MS = 2000;

export interface StdioServerSpawn {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The server's stderr, there before it starts so nothing it says early is lost. */
  readonly stderr = new PassThrough();
  /** How the server ended (`exit code 3`, `signal SIGKILL`), once it has. */
  exit: string | undefined;
  private child: ChildProcess | undefined;
  private group: number | undefined;
  private readonly buffer = new ReadBuffer();

  constructor(private readonly params: StdioServerSpawn) {}

  /** The server's pid (also its process group's id) once it started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    if (this.child) throw new Error('the MCP server was already started');
    return new Promise((resolve, reject) => {
      const child = spawn(this.params.command, this.params.args, {
        env: this.params.env,
        cwd: this.params.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        // its own process group (and session: no controlling terminal), ended as one on close
        detached: true,
      });
      this.child = child;
      child.on('error', (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.on('spawn', () => {
        this.group = child.pid;
        resolve();
      });
      child.on('close', (code, signal) => {
        this.exit = signal ? `signal ${signal}` : `exit code ${code}`;
        this.child = undefined;
        this.onclose?.();
      });
      child.stdin?.on('error', (err) => this.onerror?.(err));
      child.stdout?.on('error', (err) => this.onerror?.(err));
      child.stdout?.on('data', (chunk: Buffer) => {
        try {
          this.buffer.append(chunk);
          for (let message = this.buffer.readMessage(); message; message = this.buffer.readMessage())
            this.onmessage?.(message);
        } catch (err) {
          this.onerror?.(err as Error);
        }
      });
      child.stderr?.pipe(this.stderr);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin) return reject(new Error('Not connected'));
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', () => resolve());
    });
  }

  /** Close stdin, give the server time to exit, then SIGTERM and SIGKILL its group; never throws. */
  async close(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
      const waitExit = () =>
        Promise.race([exited, new Promise<void>((r) => setTimeout(r, GRACE_MS).unref())]);
      try {
        child.stdin?.end();
      } catch {
        // already closed
      }
      await waitExit();
      if (child.exitCode === null && child.signalCode === null) {
        this.signalGroup('SIGTERM');
        await waitExit();
      }
    }
    // whatever the server left in its group (it may have exited on its own long ago)
    this.signalGroup('SIGKILL');
    this.buffer.clear();
  }

  private signalGroup(signal: NodeJS.Signals): void {
    if (this.group === undefined) return;
    try {
      process.kill(-this.group, signal);
    } catch {
      // the group is empty
    }
  }
}
