// What Stryker mutates, in groups run one after another (npm run test:mutations -- --stryker
// [--group name]), each with the test files that cover it: a mutant runs only the tests of its
// group that reach it (coverage per test, children included: scripts/stryker/vitest-setup.ts), so
// a group's files bound its cost. A file's tests go in the group of the code they are about; a
// test file added for a group's survivors is added here. `env`: what the group's tests run with
// (the searches' IOLAB_FUZZ_RUNS: the Ring's model test runs 40 sequences, not npm test's 300,
// and not its 22 regression replays, or each mutant it reaches would cost a minute or more; the
// score is then a floor of what npm test catches).
export const groups = {
  ring: {
    mutate: ['src/ring/**/*.ts'],
    tests: [
      'test/ring*.test.ts', 'test/channel*.test.ts', 'test/stress-ring.test.ts', 'test/inet-socket.test.ts',
      'test/echo-public-api.test.ts', 'test/api-docs.test.ts', 'test/cluster-listen.test.ts', 'test/listen-handle.test.ts',
    ],
    env: { IOLAB_FUZZ_RUNS: '40', IOLAB_FUZZ_REGRESSIONS: '0' },
  },
  paths: {
    mutate: ['src/write-target.ts', 'src/run-files.ts', 'src/path-options.ts'],
    tests: [
      'test/write-targets.test.ts', 'test/user-data.test.ts', 'test/bench-paths.test.ts', 'test/bench-output.test.ts',
      'test/bench-safety.test.ts', 'test/refused-up-front.test.ts', 'test/replace-keeps-attributes.test.ts',
      'test/newline-names.test.ts', 'test/demo-readv-writev.test.ts', 'test/report.test.ts',
    ],
  },
  http: {
    mutate: ['src/bench/http.ts'],
    tests: ['test/bench-http.test.ts'],
  },
};

/** The group named by IOLAB_STRYKER_GROUP (the driver sets it for Stryker and its runners). */
export function currentGroup() {
  const name = process.env.IOLAB_STRYKER_GROUP ?? 'ring';
  const group = groups[name];
  if (!group) throw new Error(`IOLAB_STRYKER_GROUP=${name}: no such group (${Object.keys(groups).join(', ')})`);
  return { name, ...group };
}
