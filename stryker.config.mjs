// StrykerJS over the TypeScript the issue named (run by npm run test:mutations, which picks the
// group: scripts/stryker/groups.mjs). Mutants are switched at run time in one instrumented copy
// (the sandbox, .stryker-tmp/); the tests' global setup compiles that copy's src/ into its dist/,
// and the children the tests start take the mutant from their environment
// (scripts/stryker/vitest-setup.ts). The HTML and JSON reports go to reports/mutation/ (not
// committed); test/mutations/summary.md is the committed summary.
import { currentGroup } from './scripts/stryker/groups.mjs';
import { rangeOf, readSample } from './scripts/stryker/sample.mjs';

const group = currentGroup();
// A sampled run (scripts/stryker/sample.mjs): the sampled places only, the nodes inside them ignored
const sample = process.env.IOLAB_STRYKER_SAMPLE ? readSample(process.env.IOLAB_STRYKER_SAMPLE) : undefined;

export default {
  testRunner: 'vitest',
  vitest: { configFile: 'scripts/stryker/vitest.config.ts', related: false },
  checkers: ['typescript'],
  tsconfigFile: 'scripts/stryker/tsconfig.json',
  checkerNodeArgs: ['--import', './scripts/stryker/typescript-api.mjs'],
  mutate: sample ? sample.places.map(rangeOf) : group.mutate,
  ...(sample && { plugins: ['@stryker-mutator/*', './scripts/stryker/sample-ignorer.mjs'], ignorers: ['iolab-sample'] }),
  // Each mutant runs only the tests that reached it. Two runners, one test file at a time each:
  // the two cores, shared with whatever else runs.
  coverageAnalysis: 'perTest',
  concurrency: 2,
  // A mutant reached only while a module loads would need every test of the group to run again
  // with the module loaded anew; these are few (constants, tables) and ignored (the summary
  // counts them).
  ignoreStatic: true,
  // The first run takes every test of the group one file at a time, instrumented: the ring
  // group's takes 10 to 20 minutes on 2 shared cores (Stryker's default allows 5)
  dryRunTimeoutMinutes: 60,
  // A child that hangs is a timeout: the tests bound their children by vitest's 30 s timeout
  timeoutMS: 30_000,
  timeoutFactor: 2,
  reporters: ['html', 'json', 'progress'],
  htmlReporter: { fileName: `reports/mutation/${group.name}.html` },
  jsonReporter: { fileName: `reports/mutation/${group.name}.json` },
  ignorePatterns: ['/build-asan', '/bench-results', '/dist', '/prebuilds', '/build-prebuild', '/build/Release/obj.target',
    '/build/Release/.deps', '/build/Release/obj', '/reports'],
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
