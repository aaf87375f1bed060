// Ring ops over mapped memory that faults: a read into a read-only mapping (iolab's mmap of a
// write-sealed memfd) and a write (stream.write too) from a mapping whose file shrank under it. Each rejects with
// EFAULT, as the sync readv/writev throw it, instead of crashing the process when the addon
// copies between its op memory and the view. Each case runs in a child process, so a SIGSEGV or
// SIGBUS fails the test instead of killing the runner.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { projectRoot } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-ring-mapped-');
checkLeaksAfterAll(tmp);

async function runChild(body: string) {
  const script = `
const fs = await import('node:fs');
const { native } = await import('./src/native.ts');
const { Ring } = await import('./src/ring/index.ts');
const ring = new Ring();
const file = fs.openSync(process.env.IOLAB_TMP + '/data-' + process.pid, 'w+');
fs.writeSync(file, 'abcdefgh'.repeat(512));
const [a, b] = native.socketpair('stream');
const code = async (f) => { try { const v = await f(); return 'ok ' + JSON.stringify(v); } catch (e) { return e.code; } };
const result = {};
${body}
await ring.close();
for (const fd of [file, a, b]) fs.closeSync(fd);
console.log(JSON.stringify({ result, live: native.liveObjects() }));
`;
  const child = await execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: projectRoot, reject: false, timeout: 30_000, env: { IOLAB_TMP: tmp.path } });
  expect({ exitCode: child.exitCode, signal: child.signal, stderr: child.stderr }).toEqual({ exitCode: 0, signal: undefined, stderr: '' });
  return JSON.parse(child.stdout);
}

// `ro`: a view of a write-sealed memfd's mapping (4 KiB of zeros)
const readOnlyMapping = `
const memfd = native.memfdCreate('read-only', { allowSealing: true });
native.ftruncate(memfd, 4096);
native.addSeals(memfd, native.seals.F_SEAL_WRITE | native.seals.F_SEAL_SHRINK);
const mapping = native.mmap(memfd, 4096);
const ro = new Uint8Array(mapping);`;

describe('Ring ops over mapped memory that faults', () => {
  it('a read into a read-only mapping rejects with EFAULT, as the sync readv throws it', async () => {
    const report = await runChild(`${readOnlyMapping}
const send = () => native.writev(a, [Buffer.from('socket bytes')]);
result.sync = await code(() => native.readv(file, [ro], 0));
result.read = await code(() => ring.read(file, ro, 0));
result.readv = await code(() => ring.readv(file, [Buffer.alloc(2), ro.subarray(0, 8)], 0));
result.batchDirect = await code(() => ring.readvBatch(file, [{ buffers: [Buffer.alloc(4)], position: 0 }, { buffers: [ro], position: 8 }]));
const fresh = fs.openSync(process.env.IOLAB_TMP + '/data-' + process.pid, 'r'); // its file position: 0
result.batchFilePosition = await code(() => ring.readvBatch(fresh, [{ buffers: [ro] }]));
fs.closeSync(fresh);
send(); result.recv = await code(() => ring.recv(b, ro));
send(); result.recvmsg = await code(() => ring.recvmsg(b, [ro]));
send(); result.recvmsgBatch = await code(() => ring.recvmsgBatch(b, [[ro]]));
result.untouched = Buffer.from(ro).every((x) => x === 0);
native.munmap(mapping);
fs.closeSync(memfd);
`);
    expect(report.result).toEqual({
      sync: 'EFAULT', read: 'EFAULT', readv: 'EFAULT', batchDirect: 'EFAULT', batchFilePosition: 'EFAULT',
      recv: 'EFAULT', recvmsg: 'EFAULT', recvmsgBatch: 'EFAULT', untouched: true,
    });
    expect(report.live).toMatchObject({ rings: 0, ringOps: 0, heldBuffers: 0, ownedFds: 0, mappings: 0 });
  });

  it("at a file's end a read into a read-only mapping gives 0, as the sync readv does; with bytes to read, EFAULT and the file position unmoved", async () => {
    const report = await runChild(`${readOnlyMapping}
const name = process.env.IOLAB_TMP + '/data-' + process.pid;
result.syncAtEnd = await code(() => native.readv(file, [ro], 4096));
result.syncPastEnd = await code(() => native.readv(file, [ro], 12000));
result.readAtEnd = await code(() => ring.read(file, ro, 4096));
result.readPastEnd = await code(() => ring.read(file, ro, 12000));
result.readvPastEnd = await code(() => ring.readv(file, [Buffer.alloc(2), ro], 12000));
result.batchPastEnd = await code(async () => [...await ring.readvBatch(file, [{ buffers: [ro], position: 12000 }])]);
const atEnd = fs.openSync(name, 'r');
fs.readSync(atEnd, Buffer.alloc(4096)); // its file position: the end
result.syncFilePositionAtEnd = await code(() => native.readv(atEnd, [ro]));
result.readFilePositionAtEnd = await code(() => ring.read(atEnd, ro));
fs.closeSync(atEnd);
const atStart = fs.openSync(name, 'r');
result.readFilePositionWithBytes = await code(() => ring.read(atStart, ro));
const next = Buffer.alloc(8);
fs.readSync(atStart, next);
result.thenTheFileReads = next.toString();
fs.closeSync(atStart);
result.untouched = Buffer.from(ro).every((x) => x === 0);
native.munmap(mapping);
fs.closeSync(memfd);
`);
    expect(report.result).toEqual({
      syncAtEnd: 'ok 0', syncPastEnd: 'ok 0', readAtEnd: 'ok 0', readPastEnd: 'ok 0', readvPastEnd: 'ok 0', batchPastEnd: 'ok [0]',
      syncFilePositionAtEnd: 'ok 0', readFilePositionAtEnd: 'ok 0', readFilePositionWithBytes: 'EFAULT', thenTheFileReads: 'abcdefgh',
      untouched: true,
    });
    expect(report.live).toMatchObject({ rings: 0, ringOps: 0, heldBuffers: 0, ownedFds: 0, mappings: 0 });
  });

  it('a write from a mapping whose file shrank rejects with EFAULT, as the sync writev throws it', async () => {
    const report = await runChild(`
const memfd = native.memfdCreate('shrunk');
native.ftruncate(memfd, 8192);
const mapping = native.mmap(memfd, 8192, { write: true });
native.ftruncate(memfd, 0);
const gone = new Uint8Array(mapping, 4096, 16);
result.sync = await code(() => native.writev(a, [gone]));
result.write = await code(() => ring.write(file, gone, 0));
result.writev = await code(() => ring.writev(file, [Buffer.from('x'), gone], 0));
result.send = await code(() => ring.send(a, gone));
result.sendmsg = await code(() => ring.sendmsg(a, [gone]));
result.sendmsgBatch = await code(() => ring.sendmsgBatch(a, [{ buffers: [gone] }]));
const pool = ring.setupBufRing({ count: 2, size: 64 });
const stream = ring.recvMultishot(b, pool, { data() {}, end() {} });
result.streamWrite = await code(() => stream.write(gone));
await stream.close();
result.fileUntouched = fs.readFileSync(process.env.IOLAB_TMP + '/data-' + process.pid, 'utf8').startsWith('abcdefgh');
native.munmap(mapping);
fs.closeSync(memfd);
`);
    expect(report.result).toEqual({
      sync: 'EFAULT', write: 'EFAULT', writev: 'EFAULT', send: 'EFAULT', sendmsg: 'EFAULT', sendmsgBatch: 'EFAULT', streamWrite: 'EFAULT',
      fileUntouched: true,
    });
    expect(report.live).toMatchObject({ rings: 0, ringOps: 0, heldBuffers: 0, ownedFds: 0, mappings: 0 });
  });

  it("a write from a view that straddles the end of a shrunk file's mapping rejects with EFAULT: the 8 bytes before the end are not sent alone", async () => {
    const report = await runChild(`
const memfd = native.memfdCreate('straddle');
native.ftruncate(memfd, 8192);
const mapping = native.mmap(memfd, 8192, { write: true });
new Uint8Array(mapping).fill(0x61, 0, 4096);
native.ftruncate(memfd, 4096);
const straddle = new Uint8Array(mapping, 4088, 16); // 8 bytes of the file, then 8 past its end
result.send = await code(() => ring.send(a, straddle));
result.write = await code(() => ring.write(file, straddle, 0));
const pool = ring.setupBufRing({ count: 2, size: 64 });
const stream = ring.recvMultishot(b, pool, { data() {}, end() {} });
result.streamWrite = await code(() => stream.write(straddle));
await stream.close();
native.setNonBlocking(b, true);
result.peerGot = await code(() => native.readv(b, [Buffer.alloc(64)]));
result.fileUntouched = fs.readFileSync(process.env.IOLAB_TMP + '/data-' + process.pid, 'utf8').startsWith('abcdefgh');
native.munmap(mapping);
fs.closeSync(memfd);
`);
    expect(report.result).toEqual({ send: 'EFAULT', write: 'EFAULT', streamWrite: 'EFAULT', peerGot: 'EAGAIN', fileUntouched: true });
    expect(report.live).toMatchObject({ rings: 0, ringOps: 0, heldBuffers: 0, ownedFds: 0, mappings: 0 });
  });
});
