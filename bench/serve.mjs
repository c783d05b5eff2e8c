/** The scripted model server for benchmarks, with every request's arrival stamped on the hrtime clock. */
import { startScriptServer } from '../dist/model/script-server.js';

/** A script server whose request log also stamps each arrival (body fully read) with process.hrtime. */
export async function serve(script, model) {
  const server = await startScriptServer(script, { models: [model] });
  const arrivals = [];
  const push = server.requests.push.bind(server.requests);
  server.requests.push = (...items) => {
    const at = process.hrtime.bigint();
    for (const r of items) arrivals.push({ at, method: r.method, path: r.path, body: r.body });
    return push(...items);
  };
  return { server, arrivals };
}
