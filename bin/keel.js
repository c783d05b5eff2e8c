#!/usr/bin/env node
// Entry point. `--version` answers without loading the CLI so a cold start stays cheap.
import { readFileSync } from 'node:fs';

// `keel ... | head`: once the reader is gone there is no one to tell, so end quietly, not with a stack.
// A running session listens for SIGTERM: it is told to stop so its log still ends with a terminal code.
let brokenPipe = false;
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code !== 'EPIPE') throw err;
    if (brokenPipe) return;
    brokenPipe = true;
    if (process.listenerCount('SIGTERM') > 0) process.emit('SIGTERM', 'SIGTERM');
    else process.exit(process.exitCode ?? 0);
  });
}

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${pkg.version}\n`);
} else {
  const { main } = await import('../dist/bundle/main.js');
  process.exitCode = await main(process.argv);
}
