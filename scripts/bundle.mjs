// Bundle the compiled CLI into a few files so `keel` starts fast: Node loads one module graph of a
// handful of files instead of hundreds (zod, commander, openai). Verbs stay lazy: each dynamic import
// becomes its own chunk. better-sqlite3 stays external (a native addon).
import { rmSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const outdir = new URL('../dist/bundle/', import.meta.url).pathname;
const root = new URL('..', import.meta.url).pathname;

// zod's `z` namespace re-exports every locale (about 60 languages, half of zod's code), so esbuild cannot
// drop them; keel only ever uses zod's default English messages. Measured: ~15 ms less at every start.
const englishOnlyZod = {
  name: 'english-only-zod',
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${'node_modules'}/zod/`)
        ? { path: 'zod-locales', namespace: 'keel' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'keel' }, () => ({
      contents: "export { default as en } from 'zod/v4/locales/en.js';",
      resolveDir: root,
    }));
  },
};
rmSync(outdir, { recursive: true, force: true });
const { metafile } = await build({
  entryPoints: {
    main: new URL('../dist/cli/main.js', import.meta.url).pathname,
    // the code graph's indexer runs in a worker thread, which needs a file of its own
    'graph-worker': new URL('../dist/graph/worker.js', import.meta.url).pathname,
    // the safety net's snapshot is prepared in a worker thread while the first model request runs
    'net-worker': new URL('../dist/policy/net-worker.js', import.meta.url).pathname,
  },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['better-sqlite3', 'koffi'],
  chunkNames: 'chunks/[name]-[hash]',
  // some dependencies call require() for Node built-ins; give ESM chunks a real one
  banner: {
    js: "import { createRequire as __keelRequire } from 'node:module'; const require = __keelRequire(import.meta.url);",
  },
  plugins: [englishOnlyZod],
  // V8 parses every byte of a chunk before running it: without whitespace and comments a trivial ask
  // compiles 0.8 MB instead of 1.1 MB. Names are kept (no identifier minification), so stacks still read.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
  // which sources each chunk holds: test/e2e/launch.test.ts reads it to see what a verb loads
  metafile: true,
});
writeFileSync(`${outdir}meta.json`, JSON.stringify(metafile));
