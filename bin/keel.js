#!/usr/bin/env node
// Entry point. `--version` answers without loading the CLI so a cold start stays cheap.
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${pkg.version}\n`);
} else {
  const { main } = await import('../dist/bundle/main.js');
  process.exitCode = await main(process.argv);
}
