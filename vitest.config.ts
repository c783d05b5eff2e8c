import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // a private PostgreSQL cluster, started only when a test file asks for a database (test/helpers/pg.ts)
    globalSetup: ['./test/helpers/pg-global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // e2e tests spawn the binary; two cores, so keep parallelism modest
    maxWorkers: 2,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
