import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // forks: the addon and the fd counts are per process; --expose-gc lets tests run
    // finalizers (mappings, held buffers) before checking the live-object counters.
    pool: 'forks',
    execArgv: ['--expose-gc'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    globalSetup: ['test/global-setup.ts'],
  },
});
