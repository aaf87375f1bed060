// The test run Stryker drives (stryker.config.mjs: vitest.configFile): the project's own config,
// with the test files of the group being mutated (scripts/stryker/groups.mjs), the setup that hands the mutant to
// children, and forks again: Stryker's runner asks for worker threads, but the tests need a
// process each (the addon and fd counts are per process, and --expose-gc for the leak check).
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import base from '../../vitest.config.ts';
// @ts-expect-error: a plain .mjs module without types
import { currentGroup } from './groups.mjs';

const root = join(import.meta.dirname, '..', '..');

// (spread, not mergeConfig: that would add the group's files to the base's include of every file)
export default defineConfig({
  ...base,
  root,
  test: {
    ...base.test,
    include: currentGroup().tests,
    env: { ...base.test?.env, ...currentGroup().env },
    setupFiles: [join(import.meta.dirname, 'vitest-setup.ts')],
  },
  plugins: [{
    name: 'iolab-stryker-forks',
    configureVitest({ project }: { project: { config: { pool: string } } }) {
      project.config.pool = 'forks';
    },
  }],
});
