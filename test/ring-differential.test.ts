// The Ring against the sync calls over the product of what a read can meet: fd kind (file,
// stream socket, seqpacket, pipe, memfd) x position (omitted, null, -1, 0, 3) x peer timing (the
// bytes there, or some now and the rest later) x memory (heap, SharedArrayBuffer, DataView, a
// memfd's read-write and read-only mappings, detached, a resizable buffer shrunk) x call (read,
// readv of one view and of several, readvBatch on its direct path and with the SQ full, recv).
// The oracle is the sync call on a twin fd: the value or errno code, what the views hold, what
// is left in the fd. Every case runs in a child process (support/ring-differential/), so a
// crash fails its case and the next case runs in a new child.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allCases, calls, describeCase, fdKinds, verdict, type Case, type Sides } from './support/ring-differential/cases.js';
import { CaseRunner } from './support/child-runner.js';

const tmp = shortTempDir('iolab-ring-diff-');
checkLeaksAfterAll(tmp);

const cases = allCases();
// about 30 s here (twice that on a build that crashes: a child per crash), several times that under ASan
const timeoutMs = process.env.IOLAB_ASAN === '1' ? 900_000 : 240_000;
const found = new Map<Case, string>();
let runner: CaseRunner<Case, Sides>;

beforeAll(async () => {
  // plain JS over the compiled package: a new child after a crash starts in a fraction of a second
  runner = new CaseRunner(join(dirname(fileURLToPath(import.meta.url)), 'support/ring-differential/child.mjs'), [], { IOLAB_DIFF_DIR: tmp.path });
  for (const c of cases) {
    const wrong = verdict(c, await runner.run(c));
    if (wrong !== undefined) found.set(c, wrong);
  }
}, timeoutMs);
afterAll(() => runner.stop());

describe('the Ring reads as the sync calls do', () => {
  it(`the product has ${cases.length} cases, each run (children started: one, plus one per crash)`, () => {
    expect(cases.length).toBeGreaterThan(1000);
    expect(runner.started).toBe(1 + [...found.values()].filter((w) => w.startsWith('the process died')).length);
  });

  for (const call of calls) {
    for (const fd of fdKinds) {
      it(`${call} of a ${fd}`, () => {
        const wrong = cases.filter((c) => c.call === call && c.fd === fd && found.has(c));
        expect(wrong.map((c) => `${describeCase(c)}:\n    ${found.get(c)}`)).toEqual([]);
      });
    }
  }
});
