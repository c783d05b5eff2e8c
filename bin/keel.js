#!/usr/bin/env node
// Entry point. `--version` answers without loading the CLI so a cold start stays cheap.
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${pkg.version}\n`);
} else {
  // Node's fetch parses HTTP with a WebAssembly module; V8's optimizing tier compiles it in the
  // background and Node waits for that before exiting (~50-100 ms per run). The baseline tier is
  // plenty for parsing a few responses, and keel runs no other WebAssembly.
  setFlagsFromString('--liftoff-only');
  const { main } = await import('../dist/bundle/main.js');
  process.exitCode = await main(process.argv);
}
