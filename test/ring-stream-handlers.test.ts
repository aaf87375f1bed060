// What a stream's handlers can do to the Ring while it calls them: throw as ring.close() ends
// the streams. A case whose handler throws runs in a child process, where the uncaught
// exception it reports is counted instead of failing the runner.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { projectRoot } from '../src/native.js';
import { ringTestSetup } from './support/ring.js';

ringTestSetup('iolab-ring-stream-handlers-');

async function runChild(script: string) {
  const child = await execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: projectRoot, reject: false, timeout: 30_000 });
  expect({ exitCode: child.exitCode, signal: child.signal, timedOut: child.timedOut, stderr: child.stderr })
    .toEqual({ exitCode: 0, signal: undefined, timedOut: false, stderr: '' });
  return JSON.parse(child.stdout);
}

describe('handlers that throw', () => {
  it('ring.close() settles and ends every stream once though each end handler throws; each throw is reported', async () => {
    // Stream 0 holds the pool's one buffer with its recv armed (its end comes from the
    // cancelled recv); streams 1 and 2 wait for a buffer, nothing in the kernel (their end
    // comes as close() settles).
    const report = await runChild(`
const { native } = await import('./src/native.ts');
const { Ring } = await import('./src/ring/index.ts');
const uncaught = [];
process.on('uncaughtException', (e) => uncaught.push(e.message));
const tick = () => new Promise((r) => setTimeout(r, 20));
const ring = new Ring({ entries: 16 });
const pool = ring.setupBufRing({ count: 1, size: 64 });
const pairs = [0, 1, 2].map(() => native.socketpair('stream'));
const ends = [0, 0, 0];
let chunks = 0;
pairs.forEach(([, b], i) => ring.recvMultishot(b, pool, {
  data() { chunks++; },
  end(err) { ends[i]++; throw new Error('end ' + i + ': ' + err.name); },
}));
native.writev(pairs[0][0], [Buffer.from('a')]);
while (chunks < 1) await tick();
for (const i of [1, 2]) native.writev(pairs[i][0], [Buffer.from('b')]);
await tick();
const closed = await ring.close().then(() => 'resolved', (e) => 'rejected: ' + e.message);
await tick();
for (const [a, b] of pairs) { native.close(a); native.close(b); }
console.log(JSON.stringify({ closed, ends, chunks, uncaught: uncaught.sort() }));
`);
    expect(report).toEqual({
      closed: 'resolved', ends: [1, 1, 1], chunks: 1,
      uncaught: ['end 0: RingClosedError', 'end 1: RingClosedError', 'end 2: RingClosedError'],
    });
  });
});
