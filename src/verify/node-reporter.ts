/**
 * A reporter module for node's test runner, loaded from a data: URL through NODE_OPTIONS. Node 20's
 * TAP and JUnit reporters name a passing test's file nowhere, so ids built from them would change when
 * a test goes from failing to passing; this reporter writes one JSON line per finished test with its file.
 */

// Plain JavaScript, run by node itself: it must not depend on anything keel ships
const SOURCE = `
export default async function* keelReporter(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const data = event.data;
    const details = data.details || {};
    const error = details.error;
    let message;
    if (error) {
      const cause = error.cause;
      message = cause && typeof cause === 'object' && 'message' in cause ? String(cause.message)
        : typeof cause === 'string' ? cause : String(error.message || error);
    }
    yield JSON.stringify({
      keel: 1,
      status: event.type === 'test:pass' ? 'pass' : 'fail',
      name: data.name,
      nesting: data.nesting,
      file: data.file,
      type: details.type,
      durationMs: details.duration_ms,
      skip: data.skip !== undefined && data.skip !== false,
      todo: data.todo !== undefined && data.todo !== false,
      message,
    }) + '\\n';
  }
}
`;

/** The reporter as a data: URL that `--test-reporter` accepts; base64 keeps it free of spaces and quotes. */
export function nodeReporterUrl(): string {
  return `data:text/javascript;base64,${Buffer.from(SOURCE).toString('base64')}`;
}
