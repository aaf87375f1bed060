import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // forks: the addon and the fd counts are per process; --expose-gc lets tests run
    // finalizers (mappings, held buffers) before checking the live-object counters.
    pool: 'forks',
    // two test files at a time even on 2 cores (vitest's default would be one): most of the
    // suite waits on child processes, sockets and tracers rather than on the CPU, and every
    // test names what it creates uniquely, so files do not see each other's objects.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    execArgv: ['--expose-gc'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    globalSetup: ['test/global-setup.ts'],
  },
});
