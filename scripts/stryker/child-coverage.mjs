// Loaded into every Node process a test starts during Stryker's first run (NODE_OPTIONS, set by
// scripts/stryker/vitest-setup.ts): many tests run iolab as a child (dist/cli.js, compiled from the
// instrumented src/) or run child scripts over dist/, and Stryker counts only what runs inside the
// test's own process. Without this, a mutant that only a child reaches would be "not covered"
// and never tried. The child writes the mutants it reached to the folder the setup named; the
// setup adds them to the test that was running. Written at exit and every 200 ms, so a child that
// is killed still leaves most of what it reached.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.IOLAB_STRYKER_CHILD_COVERAGE;
if (dir) {
  const file = join(dir, `${process.pid}-${process.hrtime.bigint()}.json`);
  let written = 0;
  const write = () => {
    const cov = globalThis.__stryker__?.mutantCoverage;
    if (!cov) return;
    const reached = { ...cov.static };
    for (const perTest of Object.values(cov.perTest ?? {})) for (const id of Object.keys(perTest)) reached[id] = 1;
    const ids = Object.keys(reached);
    if (ids.length === written) return;
    written = ids.length;
    try { writeFileSync(file, JSON.stringify(ids)); } catch { /* the folder is gone: the test is over */ }
  };
  setInterval(write, 200).unref();
  process.on('exit', write);
}
