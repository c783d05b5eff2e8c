/** keel's A2A server as an outside agent meets it: the official SDK's JSON-RPC client, and reading its answers. */
import type { Message, Task } from '@a2a-js/sdk';
import { type Client, ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

/** A client of the A2A server at `origin`, sending `token` as the bearer (none when empty). */
export async function a2aClient(origin: string, token: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set('Authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] }).createFromUrl(
    origin,
  );
}

/** The text parts of a message or artifact, one per line. */
export const textOf = (parts: Message['parts'] | undefined) =>
  (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('\n');

/** The answer as a task; a plain message instead is an error that quotes it. */
export function asTask(result: Message | Task): Task {
  if (!('status' in result)) throw new Error(`expected a task, got a message: ${textOf(result.parts)}`);
  return result;
}
