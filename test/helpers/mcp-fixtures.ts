/** The fixture MCP servers (test/fixtures/mcp/) as keel runs them: each bundled, its SDK included, into one file. */
import { build } from 'esbuild';

/**
 * Bundle test/fixtures/mcp/NAME.ts into one CommonJS file at `outfile` (inside the repository, where the
 * sandbox shows it to `command = ["node", …]`).
 */
export async function bundleMcpFixture(name: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [new URL(`../fixtures/mcp/${name}.ts`, import.meta.url).pathname],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'silent',
  });
}
