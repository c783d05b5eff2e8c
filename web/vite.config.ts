// The browser workspace: static files built into dist/web/, which `keel serve` serves at `/`.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  // relative asset URLs: the page works wherever the server mounts it
  base: './',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/web/', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // one small bundle; no source maps shipped in the package
    sourcemap: false,
    reportCompressedSize: false,
  },
});
