/**
 * `a2a__<name>`: a keel session delegates to a remote A2A agent. The agent here is a small server
 * built on the SDK's own request handler and JSON-RPC transport, as any outside agent would be.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { A2A_PROTOCOL_VERSION, AgentCard, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  defaultServerCallContextBuilder,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
} from '@a2a-js/sdk/server';
import { afterEach, describe, expect, it } from 'vitest';
import { gitRepo } from '../helpers/tmp.js';
import {
  catalogueOf,
  chatBodies,
  keel,
  keelHome,
  model,
  modelFlags,
  offeredTools,
  requestMessages,
} from './harness.js';

const TOKEN = 'agent-secret-token';
/** How each keel run here is started: the agent's token in the environment its config names, a minute's time. */
const WITH_TOKEN = { env: { HELPER_TOKEN: TOKEN }, timeoutMs: 60_000 };

interface Agent {
  cardUrl: string;
  /** The Authorization header of each JSON-RPC call. */
  auth: Array<string | undefined>;
  close(): Promise<void>;
}

const agents: Agent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

/** An A2A agent that answers "agent says: <the message>" as a completed task, or fails on "fail". */
async function startAgent(): Promise<Agent> {
  const auth: Array<string | undefined> = [];
  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      const text = ctx.userMessage.parts
        .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
        .join('');
      const { taskId, contextId } = ctx;
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
          artifacts: [],
          history: [ctx.userMessage],
          metadata: undefined,
        }),
      );
      const failed = text.startsWith('fail');
      if (!failed)
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            artifact: {
              artifactId: randomUUID(),
              name: 'answer',
              description: '',
              parts: [
                {
                  content: { $case: 'text', value: `agent says: ${text}` },
                  mediaType: 'text/plain',
                  filename: '',
                  metadata: undefined,
                },
              ],
              metadata: undefined,
              extensions: [],
            },
            append: false,
            lastChunk: true,
            metadata: undefined,
          }),
        );
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: {
            state: failed ? TaskState.TASK_STATE_FAILED : TaskState.TASK_STATE_COMPLETED,
            message: failed
              ? {
                  messageId: randomUUID(),
                  contextId,
                  taskId,
                  role: 2,
                  parts: [
                    {
                      content: { $case: 'text', value: 'the widget is broken' },
                      mediaType: 'text/plain',
                      filename: '',
                      metadata: undefined,
                    },
                  ],
                  metadata: undefined,
                  extensions: [],
                  referenceTaskIds: [],
                }
              : undefined,
            timestamp: new Date().toISOString(),
          },
          metadata: undefined,
        }),
      );
    },
    async cancelTask() {},
  };
  let url = '';
  let transport: JsonRpcTransportHandler | undefined;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', async () => {
      if (req.method === 'GET' && req.url === '/.well-known/agent-card.json') {
        res.setHeader('Content-Type', 'application/json');
        res.end(JSON.stringify(AgentCard.toJSON(card(url))));
        return;
      }
      auth.push(req.headers.authorization);
      if (req.headers.authorization !== `Bearer ${TOKEN}`) {
        res.statusCode = 401;
        res.end('{"error":"no token"}');
        return;
      }
      transport ??= new JsonRpcTransportHandler(
        new DefaultRequestHandler(card(url), new InMemoryTaskStore(), executor),
      );
      const context = defaultServerCallContextBuilder({
        extensions: undefined,
        user: undefined,
        headers: {},
        requestedVersion: A2A_PROTOCOL_VERSION,
      });
      const result = await transport.handle(body, context);
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify(result));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    cardUrl: `${url}/.well-known/agent-card.json`,
    auth,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function card(url: string): AgentCard {
  return AgentCard.fromJSON({
    name: 'echo',
    description: 'answers with what it was told',
    version: '1.0.0',
    supportedInterfaces: [
      { url: `${url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION },
    ],
    capabilities: { streaming: false },
    securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'echo', description: 'echo', tags: ['echo'] }],
  });
}

const config = (cardUrl: string) =>
  `allow_shell = true\n[[a2a_agents]]\nname = "helper"\ncard_url = "${cardUrl}"\ntoken_env = "HELPER_TOKEN"\ntimeout_s = 30\n`;

const lastToolResult = (body: unknown) =>
  requestMessages(body)
    .filter((m) => m.role === 'tool')
    .map((m) => m.content ?? '')
    .pop();

describe('a2a__<name>: a remote A2A agent as a tool', () => {
  it('keel run sends the message with the token, and the agent answer reaches the next model request', async () => {
    const agent = await startAgent();
    agents.push(agent);
    const repo = gitRepo({ 'README.md': '# demo\n' });
    const home = keelHome(config(agent.cardUrl));
    const server = await model([
      {
        tool_calls: [{ name: 'a2a__helper', arguments: { message: 'what is 6 times 7?' } }],
        // offered on demand: the catalogue names it, and the call activates it
        expect: { tools: ['tools'] },
      },
      { text: 'The helper answered.' },
    ]);
    const run = await keel(['run', '--json', ...modelFlags(server), 'ask the helper'], {
      cwd: repo,
      home,
      ...WITH_TOKEN,
    });
    expect(run.stderr).toBe('');
    expect(catalogueOf(chatBodies(server)[0])).toContain('a2a__helper');
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', exit_code: 0 });
    expect(lastToolResult(chatBodies(server)[1])).toBe('agent says: what is 6 times 7?');
    expect(agent.auth.length).toBeGreaterThan(0);
    expect(agent.auth.every((a) => a === `Bearer ${TOKEN}`)).toBe(true);
  }, 90_000);

  it('a piped keel chat offers the same tools as keel run, and its call reaches the agent and comes back', async () => {
    const agent = await startAgent();
    agents.push(agent);
    const repo = gitRepo({ 'README.md': '# demo\n' });
    const home = keelHome(config(agent.cardUrl));
    const server = await model([
      // keel run's first request: only its offer is compared
      { text: 'nothing to do' },
      { tool_calls: [{ name: 'a2a__helper', arguments: { message: 'what is 6 times 7?' } }] },
      { text: 'The helper said forty-two.' },
    ]);
    const run = await keel(['run', '--json', ...modelFlags(server), 'ask the helper'], {
      cwd: repo,
      home,
      ...WITH_TOKEN,
    });
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED' });
    const chat = await keel(['chat', '--mode', 'auto', ...modelFlags(server)], {
      cwd: repo,
      home,
      ...WITH_TOKEN,
      input: 'ask the helper\n',
    });
    expect(chat.code, chat.stderr).toBe(0);
    const [runFirst, chatFirst, chatSecond] = chatBodies(server);
    // the same mode and config offer the same tools, and the catalogue lists the same rest
    expect(catalogueOf(runFirst)).toContain('a2a__helper');
    expect(catalogueOf(chatFirst)).toEqual(catalogueOf(runFirst));
    expect(offeredTools(chatFirst)).toEqual(offeredTools(runFirst));
    expect(lastToolResult(chatSecond)).toBe('agent says: what is 6 times 7?');
    expect(chat.stdout).toContain('The helper said forty-two.');
    expect(agent.auth.length).toBeGreaterThan(0);
    expect(agent.auth.every((a) => a === `Bearer ${TOKEN}`)).toBe(true);
  }, 120_000);

  it('a dead card URL, a refused token and a failed task are tool errors; the session still completes', async () => {
    const agent = await startAgent();
    agents.push(agent);
    const repo = gitRepo({ 'README.md': '# demo\n' });
    const dead = 'http://127.0.0.1:9/.well-known/agent-card.json';
    const home = keelHome(`${config(agent.cardUrl)}[[a2a_agents]]\nname = "gone"\ncard_url = "${dead}"\n`);
    const server = await model([
      { tool_calls: [{ name: 'a2a__gone', arguments: { message: 'hello?' } }] },
      { tool_calls: [{ name: 'a2a__helper', arguments: { message: 'fail please' } }] },
      { text: 'Both helpers failed.' },
    ]);
    const run = await keel(['run', '--json', ...modelFlags(server), 'ask the helpers'], {
      cwd: repo,
      home,
      ...WITH_TOKEN,
    });
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED', exit_code: 0 });
    const bodies = chatBodies(server);
    expect(lastToolResult(bodies[1])).toMatch(
      /^Error: a2a agent gone \(http:\/\/127\.0\.0\.1:9\/\.well-known\/agent-card\.json\): could not read its agent card/,
    );
    expect(lastToolResult(bodies[2])).toMatch(
      /^Error: a2a agent helper .* ended failed: the widget is broken$/,
    );

    // the same agent with a wrong token: refused, said so
    const wrong = await model([
      { tool_calls: [{ name: 'a2a__helper', arguments: { message: 'hi' } }] },
      { text: 'Refused.' },
    ]);
    const refused = await keel(['run', '--json', ...modelFlags(wrong), 'ask the helper'], {
      cwd: repo,
      home,
      env: { HELPER_TOKEN: 'not-the-token' },
      timeoutMs: 60_000,
    });
    expect(JSON.parse(refused.stdout)).toMatchObject({ code: 'COMPLETED' });
    expect(lastToolResult(chatBodies(wrong)[1])).toMatch(/^Error: a2a agent helper .*failed: .*401/);
  }, 120_000);

  it('ask mode does not offer the tool, and an untrusted project cannot add an agent', async () => {
    const agent = await startAgent();
    agents.push(agent);
    const repo = gitRepo({ 'keel.toml': config(agent.cardUrl) });
    const home = keelHome();
    const server = await model([{ text: 'No helper here.' }]);
    const run = await keel(['run', '--json', ...modelFlags(server), 'ask the helper'], {
      cwd: repo,
      home,
      ...WITH_TOKEN,
    });
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'COMPLETED' });
    const tools = (
      (chatBodies(server)[0] as { tools?: Array<{ function: { name: string } }> }).tools ?? []
    ).map((t) => t.function.name);
    expect(tools).toContain('shell');
    expect(tools).not.toContain('a2a__helper');
    expect(catalogueOf(chatBodies(server)[0])).not.toContain('a2a__helper');

    const askHome = keelHome(config(agent.cardUrl));
    const ask = await model([{ text: 'Read-only.' }]);
    await keel(['ask', '--json', ...modelFlags(ask), 'ask the helper'], {
      cwd: gitRepo(),
      home: askHome,
      ...WITH_TOKEN,
    });
    const offered = (
      (chatBodies(ask)[0] as { tools?: Array<{ function: { name: string } }> }).tools ?? []
    ).map((t) => t.function.name);
    expect(offered).toContain('read_file');
    expect(offered).not.toContain('a2a__helper');
    expect(catalogueOf(chatBodies(ask)[0])).not.toContain('a2a__helper');
    expect(agent.auth).toEqual([]);
  }, 120_000);
});
