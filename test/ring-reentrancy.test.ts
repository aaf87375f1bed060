// JS that runs while a Ring method reads its arguments (option getters, array elements with
// getters): a getter that closes the Ring, with nothing or something in flight, and one that
// detaches the batch flat forms' Int32Arrays and collects them. Then, complete by construction:
// every public method of Ring, RingStream and BufferRing (a meta-test fails when one has no
// entry in support/ring-reentrancy/table.ts) with each re-entering action (close the Ring,
// close or open a stream, detach or shrink memory, call the same method again) at each place
// its arguments can run JS and from inside a stream's data and end handlers. Each case runs in
// a child process, so a crash fails its test instead of killing vitest; the file also runs under
// ASan (`node scripts/test-asan.mjs test/ring-reentrancy.test.ts`). And JS that runs while the Ring
// settles a Promise: a `then` getter and an index setter on Array.prototype.
import { afterAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { native, projectRoot } from '../src/native.js';
import { BufferRing, Ring, RingStream } from '../src/index.js';
import { CaseRunner } from './support/child-runner.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { actions, afterClose, handlerPlaces, placesOf, tables, type ReentryCase } from './support/ring-reentrancy/table.js';

const tmp = shortTempDir('iolab-reentrancy-');
checkLeaksAfterAll(tmp);

// The child's frame: `ring` (public, or `raw`: the native class src/ring/ring.ts is built on, where
// the batches' object forms are reached directly), a socketpair a/b, `closeNow()` for getters,
// `inFlight` (a recv waiting on another socketpair, or nothing). `body` sets `result` to the
// call's outcome; the child prints what the parent checks.
function childScript(body: string, options: { raw?: boolean; inFlight?: boolean } = {}): string {
  return `
const fs = await import('node:fs');
const { native } = await import('./src/native.ts');
const { Ring } = ${options.raw ? '{ Ring: native.Ring }' : "await import('./src/ring/index.ts')"};
const ring = new Ring();
const [a, b] = native.socketpair('stream');
const [c, d] = native.socketpair('stream');
let closing;
const closeNow = () => { closing ??= ring.close(); };
const pending = ${options.inFlight ? "ring.recv(d, Buffer.alloc(1)).then(() => 'resolved', (e) => e.name)" : 'undefined'};
if (pending) { ring.submit(); await new Promise((r) => setImmediate(r)); }
let result;
async function outcome(call) {
  let p;
  try { p = call(); } catch (e) { return { threw: e.name, code: e.code }; }
  return p.then((value) => ({ resolved: value }), (e) => ({ rejected: e.name, code: e.code }));
}
${body}
await closing;
const report = { result, pending: await pending, closed: ring.closed, inFlight: ring.inFlight };
for (const fd of [a, b, c, d]) fs.closeSync(fd);
for (let i = 0; i < 3; i++) { globalThis.gc(); await new Promise((r) => setImmediate(r)); }
report.live = native.liveObjects();
console.log(JSON.stringify(report));
`;
}

async function runChild(script: string, nodeFlags: string[] = []) {
  return execa(process.execPath, ['--expose-gc', ...nodeFlags, '--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: projectRoot, reject: false, timeout: 30_000, env: { IOLAB_TMP: tmp.path } });
}

const zero = { rings: 0, ringOps: 0, heldBuffers: 0, ownedFds: 0 };
// the public methods reject (async methods never throw); the addon's own throw
const closedError = { rejected: 'RingClosedError', code: 'ERR_RING_CLOSED' };
const closedThrown = { threw: 'RingClosedError', code: 'ERR_RING_CLOSED' };

// Each: a call whose arguments run closeNow() while the method reads them.
const calls: Record<string, string> = {
  'sendmsg (the fds option)': "result = await outcome(() => ring.sendmsg(a, [Buffer.from('x')], { get fds() { closeNow(); return [a]; } }));",
  'recvmsg (the maxFds option)': 'result = await outcome(() => ring.recvmsg(b, [Buffer.alloc(4)], { get maxFds() { closeNow(); return 1; } }));',
  'writev (a buffer of several)': `const list = [Buffer.from('x'), Buffer.from('y')];
Object.defineProperty(list, 1, { get() { closeNow(); return Buffer.from('y'); } });
result = await outcome(() => ring.writev(a, list));`,
  'readv (a buffer of several)': `const list = [Buffer.alloc(1), Buffer.alloc(1)];
Object.defineProperty(list, 1, { get() { closeNow(); return Buffer.alloc(1); } });
result = await outcome(() => ring.readv(b, list));`,
  'fsync (the datasync option)': `const file = fs.openSync(process.env.IOLAB_TMP + '/fsync-' + process.pid, 'w');
result = await outcome(() => ring.fsync(file, { get datasync() { closeNow(); return true; } }));
fs.closeSync(file);`,
  'connect (the address host)': `const tcp = native.socket('inet', 'stream');
result = await outcome(() => ring.connect(tcp, { get host() { closeNow(); return '127.0.0.1'; }, port: 9 }));
fs.closeSync(tcp);`,
  'sendmsgBatch (a message)': "result = await outcome(() => ring.sendmsgBatch(a, [{ buffers: [Buffer.from('x')], get fds() { closeNow(); return [a]; } }]));",
  'recvmsgBatch (the maxFds option)': 'result = await outcome(() => ring.recvmsgBatch(b, [[Buffer.alloc(4)]], { get maxFds() { closeNow(); return 1; } }));',
};
// The batches' object forms, which the public methods reach only for what the flat form does
// not take: called on the native class directly.
const rawCalls: Record<string, string> = {
  'sendmsgBatch object form (a message)': "result = await outcome(() => ring.sendmsgBatch(a, [{ buffers: [Buffer.from('x')], get fds() { closeNow(); return [a]; } }]));",
  'recvmsgBatch object form (the maxFds option)': 'result = await outcome(() => ring.recvmsgBatch(b, [[Buffer.alloc(4)]], { get maxFds() { closeNow(); return 1; } }));',
  'recvmsgBatch object form (a buffer list)': `const lists = [[Buffer.alloc(1)], [Buffer.alloc(1)]];
Object.defineProperty(lists, 1, { get() { closeNow(); return [Buffer.alloc(1)]; } });
result = await outcome(() => ring.recvmsgBatch(b, lists));`,
  'closeFds (an fd)': `const file = fs.openSync(process.env.IOLAB_TMP + '/closefds-' + process.pid, 'w');
const fds = [file];
Object.defineProperty(fds, 0, { get() { closeNow(); return file; } });
result = await outcome(() => ring.closeFds(fds));
fs.closeSync(file);`,
};

describe('a getter that closes the Ring while a method reads its arguments', () => {
  for (const inFlight of [false, true]) {
    const when = inFlight ? 'with an op in flight' : 'with nothing in flight';
    for (const [raw, table] of [[false, calls], [true, rawCalls]] as const) {
      for (const [name, body] of Object.entries(table)) {
        it(`${name}, ${when}: RingClosedError, close() settles, nothing left`, async () => {
          const child = await runChild(childScript(body, { raw, inFlight }));
          expect({ exitCode: child.exitCode, signal: child.signal, timedOut: child.timedOut, stderr: child.stderr })
            .toEqual({ exitCode: 0, signal: undefined, timedOut: false, stderr: '' });
          const report = JSON.parse(child.stdout);
          expect(report.result).toEqual(raw ? closedThrown : closedError);
          expect(report.pending).toBe(inFlight ? 'RingClosedError' : undefined);
          expect(report).toMatchObject({ closed: true, inFlight: 0, live: zero });
        });
      }
    }
  }
});

// A getter among the views detaches the count and fd Int32Arrays and collects them: the flat
// forms work from copies taken before any call that can run JS. --single-threaded-gc frees the
// backing stores inside gc(), on this thread (otherwise a sweeper thread frees them a moment later).
describe('the batch flat forms, their Int32Arrays detached and collected by a getter', () => {
  // (only once: the getter runs again when the batch settles, and Node 24 refuses to transfer a
  // detached buffer)
  const detach = `const drop = (...arrays) => { for (const x of arrays) if (x.buffer.byteLength > 0) structuredClone(x.buffer, { transfer: [x.buffer] }); globalThis.gc(); };
const views = ['a', 'b', 'c', 'd'].map((s) => Buffer.from(s));`;

  it('sendmsgBatchFlat sends the messages and fds it was given', async () => {
    const child = await runChild(childScript(`${detach}
const [s, t] = native.socketpair('seqpacket');
const viewCounts = Int32Array.of(1, 1, 1, 1), fdCounts = Int32Array.of(1, 1, 1, 1), fds = Int32Array.of(s, s, s, s);
const got = views[1];
Object.defineProperty(views, 1, { get() { drop(viewCounts, fdCounts, fds); return got; } });
const sent = await ring.sendmsgBatchFlat(s, views, viewCounts, fds, fdCounts, false);
const received = [];
for (let i = 0; i < 4; i++) {
  const buf = Buffer.alloc(4);
  const r = native.recvmsg(t, [buf], { maxFds: 4 });
  received.push(buf.toString('utf8', 0, r.bytesRead) + ':' + r.fds.length);
  for (const fd of r.fds) fs.closeSync(fd);
}
fs.closeSync(s); fs.closeSync(t);
result = { bytes: Array.from(sent[0]), received, detached: viewCounts.length };
closeNow();`, { raw: true }), ['--single-threaded-gc']);
    expect({ exitCode: child.exitCode, signal: child.signal, stderr: child.stderr }).toEqual({ exitCode: 0, signal: undefined, stderr: '' });
    const report = JSON.parse(child.stdout);
    expect(report.result).toEqual({ bytes: [1, 1, 1, 1], received: ['a:1', 'b:1', 'c:1', 'd:1'], detached: 0 });
    expect(report.live).toMatchObject(zero);
  });

  it('recvmsgBatchFlat receives into the views it was given', async () => {
    const child = await runChild(childScript(`${detach}
const [s, t] = native.socketpair('seqpacket');
for (const m of ['w', 'x', 'y', 'z']) native.sendmsg(s, [Buffer.from(m)]);
const viewCounts = Int32Array.of(1, 1, 1, 1);
const got = views[1];
Object.defineProperty(views, 1, { get() { drop(viewCounts); return got; } });
const [numbers] = await ring.recvmsgBatchFlat(t, views, viewCounts, 0, 0);
fs.closeSync(s); fs.closeSync(t);
result = { bytes: [0, 3, 6, 9].map((at) => numbers[at]), text: views.map((v) => v.toString()).join(''), detached: viewCounts.length };
closeNow();`, { raw: true }), ['--single-threaded-gc']);
    expect({ exitCode: child.exitCode, signal: child.signal, stderr: child.stderr }).toEqual({ exitCode: 0, signal: undefined, stderr: '' });
    const report = JSON.parse(child.stdout);
    expect(report.result).toEqual({ bytes: [1, 1, 1, 1], text: 'wxyz', detached: 0 });
    expect(report.live).toMatchObject(zero);
  });

  it('recvmsgBatchFlat settles when a view getter throws as the batch settles: that view gets nothing', async () => {
    const child = await runChild(childScript(`${detach}
const [s, t] = native.socketpair('seqpacket');
for (const m of ['w', 'x', 'y', 'z']) native.sendmsg(s, [Buffer.from(m)]);
const viewCounts = Int32Array.of(1, 1, 1, 1);
const got = views[1];
let reads = 0;
Object.defineProperty(views, 1, { get() { if (++reads > 1) throw new Error('not now'); return got; } });
const [numbers] = await ring.recvmsgBatchFlat(t, views, viewCounts, 0, 0);
fs.closeSync(s); fs.closeSync(t);
result = { bytes: [0, 3, 6, 9].map((at) => numbers[at]), text: [0, 2, 3].map((i) => views[i].toString()).join('') + got.toString(), reads };
closeNow();`, { raw: true }));
    expect({ exitCode: child.exitCode, signal: child.signal, stderr: child.stderr }).toEqual({ exitCode: 0, signal: undefined, stderr: '' });
    const report = JSON.parse(child.stdout);
    expect(report.result).toEqual({ bytes: [1, 1, 1, 1], text: 'wyzb', reads: 2 });
    expect(report.live).toMatchObject(zero);
  });
});

// JS the addon runs while it settles: resolving with an object looks up its `then`, and filling
// a fresh array runs a setter that Array.prototype has for the index. Each case's hook closes
// the Ring or starts ops at that moment; every Promise settles, nothing is left.
describe('JS run while ops settle', () => {
  const hooks: Record<string, string> = {
    'a then getter on Int32Array.prototype (readvBatch\'s result) that closes the Ring': `
const file = fs.openSync(process.env.IOLAB_TMP + '/settle-' + process.pid, 'w+');
fs.writeSync(file, 'abcdefgh');
let hooked = 0;
Object.defineProperty(Int32Array.prototype, 'then', { configurable: true, get() { hooked++; closeNow(); return undefined; } });
const bufs = [Buffer.alloc(4), Buffer.alloc(4)];
result = await outcome(() => ring.readvBatch(file, [{ buffers: [bufs[0]], position: 0 }, { buffers: [bufs[1]] }]));
delete Int32Array.prototype.then;
result.hooked = hooked > 0; result.text = bufs[0].toString();
fs.closeSync(file);`,
    'a then getter on Object.prototype that starts ops and closes the Ring as recvmsg settles': `
native.writev(a, [Buffer.from('hi')]);
const started = [];
let hooked = 0;
Object.defineProperty(Object.prototype, 'then', { configurable: true, get() {
  if (hooked++ === 0) { started.push(ring.nop().then(() => 'nop', (e) => e.name)); closeNow(); }
  return undefined;
} });
const buf = Buffer.alloc(4);
result = await outcome(() => ring.recvmsg(b, [buf]));
delete Object.prototype.then;
result.started = await Promise.all(started);
result.hooked = hooked > 0;
result.resolved = result.resolved && result.resolved.bytesRead;`,
    'an index setter on Array.prototype that closes the Ring as a batch\'s result is filled': `
let hooked = 0;
const sent = outcome(() => ring.sendmsgBatch(a, [{ buffers: [Buffer.from('x')] }, { buffers: [Buffer.from('y')] }]));
const got = outcome(() => ring.recvmsgBatch(b, [[Buffer.alloc(1)], [Buffer.alloc(1)]]));
// set once the calls are made (JS's own array writes run it too): it runs as the results are filled
Object.defineProperty(Array.prototype, '0', { configurable: true, set() { hooked++; closeNow(); } });
result = { settled: await Promise.all([sent, got]) };
delete Array.prototype[0];
result.hooked = hooked > 0;`,
  };
  for (const inFlight of [false, true]) {
    for (const [name, body] of Object.entries(hooks)) {
      it(`${name}${inFlight ? ', with an op in flight' : ''}: no crash, every Promise settles, nothing left`, async () => {
        const child = await runChild(childScript(body, { inFlight }));
        expect({ exitCode: child.exitCode, signal: child.signal, timedOut: child.timedOut, stderr: child.stderr })
          .toEqual({ exitCode: 0, signal: undefined, timedOut: false, stderr: '' });
        const report = JSON.parse(child.stdout);
        expect(report.result.hooked).toBe(true);
        expect(report.pending).toBe(inFlight ? 'RingClosedError' : undefined);
        expect(report).toMatchObject({ closed: true, inFlight: 0, live: zero });
      });
    }
  }
});

// ---- complete by construction ----

/** The public methods of a class: its prototype's own functions but the constructor. */
function methodsOf(proto: object): string[] {
  return Object.getOwnPropertyNames(proto).filter((n) => n !== 'constructor' && typeof Object.getOwnPropertyDescriptor(proto, n)!.value === 'function');
}
const classes = { Ring: Ring.prototype, RingStream: RingStream.prototype, BufferRing: BufferRing.prototype };

describe('every public method, each re-entering action at each place JS can run', () => {
  it('every public method of Ring, RingStream and BufferRing has an entry in the table, and every entry a method', () => {
    for (const [cls, proto] of Object.entries(classes)) {
      const table = tables[cls as keyof typeof tables];
      expect(methodsOf(proto).filter((m) => !(m in table)), `${cls} methods without an entry`).toEqual([]);
      expect(Object.keys(table).filter((m) => !methodsOf(proto).includes(m)), `${cls} entries without a method`).toEqual([]);
    }
  });

  const runner = new CaseRunner<ReentryCase, string[]>(join(dirname(fileURLToPath(import.meta.url)), 'support/ring-reentrancy/child.ts'),
    ['--import', 'tsx'], { IOLAB_REENTRY_DIR: tmp.path });
  afterAll(() => runner.stop());

  for (const [cls, table] of Object.entries(tables)) {
    for (const [method, entry] of Object.entries(table)) {
      const places = [...placesOf(entry), ...handlerPlaces, afterClose];
      it(`${cls}.${method}: no crash, every Promise settles, only clear errors, nothing left (at ${places.join(', ')})`, async () => {
        const problems: string[] = [];
        for (const place of places) {
          for (const action of place === afterClose ? (['closeRing'] as const) : actions) {
            const answer = await runner.run({ cls: cls as keyof typeof tables, method, place, action });
            const found = 'crash' in answer ? [`the process died (${answer.crash})`] : answer;
            for (const p of found) problems.push(`${action} at ${place}: ${p}`);
          }
        }
        expect(problems).toEqual([]);
      }, 120_000);
    }
  }
});
