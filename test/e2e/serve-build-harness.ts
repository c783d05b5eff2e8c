/** Following a build run on keel serve, as a client does: GET /v1/runs/:id until it gets somewhere. */
import type { Served } from './serve-harness.js';

// biome-ignore lint/suspicious/noExplicitAny: a test reads whatever JSON the server answers
type Run = any;

/** Poll the run until `done` says so (a build is not in the log until its fix starts: 404 is "not yet"). */
export async function runUntil(s: Served, id: string, done: (run: Run) => boolean): Promise<Run> {
  let run: Run = null;
  for (const end = Date.now() + 40_000; Date.now() < end; ) {
    const got = await s.api('GET', `/v1/runs/${id}`);
    run = got.status === 200 ? got.body : { http: got.status, body: got.body };
    if (got.status === 200 && done(run)) return run;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`run ${id} never got there: ${JSON.stringify(run)}\n${s.stderr()}`);
}
