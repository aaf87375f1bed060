import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// The sanitized build (npm run test:asan sets IOLAB_ASAN=1) runs every spawned iolab process
// 2-4x slower, and with two files at a time a test of ten CLI calls needs more than 30 s.
const timeout = process.env.IOLAB_ASAN === '1' ? 120_000 : 30_000;

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
    testTimeout: timeout,
    hookTimeout: timeout,
    globalSetup: ['test/global-setup.ts'],
  },
});
