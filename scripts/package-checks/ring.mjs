// The package test's checks of the Ring's Node conventions, run in a project where the packed
// iolab is installed (scripts/test-package.mjs runs it once per Node line and install mode):
// `{ signal }` and `{ timeout }` on ops and batches, async methods that reject (never throw),
// Symbol.asyncDispose (and `await using` where the line parses it), connect to IPv6 and to a
// name with node:net's errors, the classes only the Ring makes; and the types of all that
// checked by tsc against the installed .d.ts, with and without Node's types.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const program = `
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import net from 'node:net';
import { Ring, AbortError, RingClosedError, BufferRing, RingStream, socketpair, writevSync, close, liveObjects } from 'iolab';

const line = Number(process.versions.node.split('.')[0]);
const ring = new Ring();
const [a, b] = socketpair('stream');

// signal: an abort cancels the op in the kernel
const controller = new AbortController();
const waiting = ring.recv(b, Buffer.alloc(8), undefined, { signal: controller.signal });
setTimeout(() => controller.abort(new Error('gone')), 10);
const aborted = await waiting.catch((e) => e);
assert.ok(aborted instanceof AbortError);
assert.deepEqual([aborted.name, aborted.code, aborted.cause.message, ring.inFlight], ['AbortError', 'ABORT_ERR', 'gone', 0]);
assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
await assert.rejects(ring.nop({ signal: AbortSignal.abort() }), { name: 'AbortError' });
const batch = ring.recvmsgBatch(b, [[Buffer.alloc(1)], [Buffer.alloc(1)]], { signal: AbortSignal.timeout(20) });
await assert.rejects(batch, { name: 'AbortError' });

// timeout: LINK_TIMEOUT, ETIMEDOUT
await assert.rejects(ring.recv(b, Buffer.alloc(8), undefined, { timeout: 20 }), { code: 'ETIMEDOUT', syscall: 'recv' });
writevSync(a, [Buffer.from('in time')]);
assert.equal(await ring.recv(b, Buffer.alloc(8), undefined, { timeout: 2000, signal: new AbortController().signal }), 7);
assert.equal(ring.inFlight, 0);

// async methods reject, never throw
let p;
assert.doesNotThrow(() => { p = ring.read('3', Buffer.alloc(1)); });
await assert.rejects(p, { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });

// connect as node:net: IPv6, a name through dns.lookup, errors with address and port
const server = net.createServer((s) => { s.on('error', () => {}); s.end('hi'); });
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const { port } = server.address();
const named = await ring.socket('inet');
await ring.connect(named, { host: 'localhost', port });
const six = await ring.socket('inet6');
const refused = await ring.connect(six, { host: '::1', port: 1 }).catch((e) => e);
assert.deepEqual([refused.code, refused.syscall, refused.address, refused.port, 'path' in refused], ['ECONNREFUSED', 'connect', '::1', 1, false]);
server.close();

// only the Ring makes these
assert.throws(() => new BufferRing(), { name: 'TypeError', code: 'ERR_ILLEGAL_CONSTRUCTOR' });
assert.throws(() => new RingStream(), { name: 'TypeError', code: 'ERR_ILLEGAL_CONSTRUCTOR' });
const pool = ring.setupBufRing({ count: 2, size: 16 });
assert.equal(typeof pool.release, 'function');
// a buffer ring closes on its own (Symbol.dispose: what \`using\` calls), the Ring goes on
pool[Symbol.dispose ?? Symbol.for('nodejs.dispose')]();
assert.throws(() => pool.view(0), { code: 'ERR_RING_BUFFER_RING_CLOSED' });

for (const fd of [a, b, named, six]) close(fd);
await ring[Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')]();
assert.equal(ring.closed, true);
await assert.rejects(ring.nop(), RingClosedError);
assert.throws(() => ring.submit(), RingClosedError);
if (line >= 24) await import('./ring-using.mjs');
assert.equal(liveObjects().rings, 0);
console.log('ring ok');
`;

// parsed only where the line knows `await using` (Node 24 on)
const usingProgram = `
import assert from 'node:assert/strict';
import { Ring, liveObjects } from 'iolab';
{
  await using ring = new Ring();
  await ring.nop();
  assert.equal(liveObjects().rings, 1);
}
assert.equal(liveObjects().rings, 0);
`;

// With Node's types: bytes() is a Buffer; the options and errors typed; wrong uses refused.
const typedNode = `
import { Ring, BufferRing, AbortError, type OpOptions, type ReadvBatchError } from 'iolab';
const ring = new Ring();
const options: OpOptions = { signal: new AbortController().signal, timeout: 100 };
const n: Promise<number> = ring.read(0, new Uint8Array(1), null, options);
const r: Promise<number> = ring.recv(0, new Uint8Array(1), undefined, { timeout: 5 });
const w: Promise<number> = ring.readv(0, [new Uint8Array(1)], null, { signal: AbortSignal.abort() });
ring.readvBatch(0, [{ buffers: [new Uint8Array(1)], position: null }], { timeout: 5 }).catch((err: ReadvBatchError) => {
  const index: number = err.index;
  const first: number | Error = err.results[0];
  return [index, first];
});
const pool = ring.setupBufRing({ count: 2, size: 16 });
const bytes: Buffer = pool.bytes(0, 1);
const dispose: () => Promise<void> = ring[Symbol.asyncDispose];
const aborted: string = new AbortError().code;
// @ts-expect-error made by ring.setupBufRing only
new BufferRing();
// @ts-expect-error a timeout is ms, a number
ring.nop({ timeout: '5' });
// @ts-expect-error the signal is an AbortSignal
ring.accept(0, { signal: true });
export { n, r, w, bytes, dispose, aborted };
`;

// Without Node's types (the package's types need none): bytes() is then a Uint8Array.
const typedBare = `
import { Ring } from 'iolab';
const ring = new Ring();
const pool = ring.setupBufRing({ count: 2, size: 16 });
const bytes: Uint8Array = pool.bytes(0, 1);
const n: Promise<number> = ring.recv(0, bytes, undefined, { timeout: 5 });
export { n };
`;

/** Runs the checks in `project` (iolab installed there) with `node`. */
export async function checks({ root, project, node, run, check }) {
  const line = Number(run(node, ['-p', 'process.versions.node']).out.trim().split('.')[0]);
  writeFileSync(join(project, 'ring-conventions.mjs'), program);
  writeFileSync(join(project, 'ring-using.mjs'), usingProgram);
  const ring = run(node, ['ring-conventions.mjs']);
  check(`the Ring: signal, timeout, rejections, asyncDispose, BufferRing's dispose${line >= 24 ? ', `await using`' : ''}, connect to IPv6 and a name, no public constructors`,
    ring.status === 0 && ring.out.trim() === 'ring ok', ring.out);
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const base = { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true };
  writeFileSync(join(project, 'ring-node.ts'), typedNode);
  writeFileSync(join(project, 'tsconfig.ring-node.json'), JSON.stringify({ compilerOptions: { ...base, lib: ['es2022', 'esnext.disposable', 'dom'], types: ['node'], typeRoots: [join(root, 'node_modules', '@types')] }, files: ['ring-node.ts'] }));
  const withNode = run(process.execPath, [tsc, '-p', join(project, 'tsconfig.ring-node.json')]);
  check("the Ring's types with Node's: options, ReadvBatchError, bytes() a Buffer (wrong uses refused)", withNode.status === 0, withNode.out);
  writeFileSync(join(project, 'ring-bare.ts'), typedBare);
  writeFileSync(join(project, 'tsconfig.ring-bare.json'), JSON.stringify({ compilerOptions: { ...base, types: [] }, files: ['ring-bare.ts'] }));
  const bare = run(process.execPath, [tsc, '-p', join(project, 'tsconfig.ring-bare.json')]);
  check("the Ring's types without Node's (bytes() a Uint8Array)", bare.status === 0, bare.out);
}
