/** `keel dev mock-server`: serve a script as a model, so keel (and hooks, and CI) can be tried without a GPU. */
import { loadScript } from '../model/script.js';
import { startScriptServer } from '../model/script-server.js';
import { EXIT } from '../term/exit-codes.js';
import { red } from './render.js';

/** Serve until interrupted; prints the base URLs to use. */
export async function runMockServer(flags: { script: string; port?: number }): Promise<number> {
  let server: Awaited<ReturnType<typeof startScriptServer>>;
  try {
    server = await startScriptServer(loadScript(flags.script), flags.port ? { port: flags.port } : {});
  } catch (err) {
    process.stderr.write(`${red('keel:')} ${(err as Error).message}\n`);
    return EXIT.usage;
  }
  process.stdout.write(`openai-compatible: ${server.url}\nollama: ${server.ollamaUrl}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
  return EXIT.ok;
}
