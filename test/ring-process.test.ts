// The Ring across process and thread boundaries: io_uring refused by a seccomp filter (a tiny
// C helper compiled here), process exit with ops pending, and Rings in worker threads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { native, projectRoot } from '../src/native.js';
import { Ring, RingClosedError } from '../src/ring/index.js';
import { buildSeccompRefuser, shortTempDir } from './support/temp.js';
import { openFdCount, settledLiveObjects, zeroLiveObjects } from './support/leaks.js';

let dir: { path: string; cleanup: () => void };
let refuse: string;
const fdsBefore = openFdCount();

beforeAll(() => {
  dir = shortTempDir('iolab-seccomp-');
  refuse = buildSeccompRefuser(dir.path);
});
afterAll(async () => {
  dir.cleanup();
  expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  expect(openFdCount()).toBe(fdsBefore);
});

const tsxEval = (code: string) => [process.execPath, '--import', 'tsx', '--input-type=module', '-e', code];

describe('io_uring refused', () => {
  const probe = "const { Ring } = await import('./src/ring/index.ts');" +
    'try { new Ring(); console.log("ring ok"); } catch (e) { console.log(JSON.stringify({ message: e.message, code: e.code, errno: e.errno, syscall: e.syscall })); }';

  it('EPERM from io_uring_setup: one sentence that says why', async () => {
    const run = await execa(refuse, ['EPERM', ...tsxEval(probe)], { cwd: projectRoot, reject: false });
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      message: 'io_uring is unavailable: io_uring_setup was refused (EPERM), as a seccomp profile or the io_uring_disabled sysctl does',
      code: 'ERR_IOURING_UNAVAILABLE',
      errno: -1,
      syscall: 'io_uring_setup',
    });
  });

  it('ENOSYS from io_uring_setup (Docker-style)', async () => {
    const run = await execa(refuse, ['ENOSYS', ...tsxEval(probe)], { cwd: projectRoot, reject: false });
    expect(JSON.parse(run.stdout)).toMatchObject({
      message: "io_uring is unavailable: io_uring_setup was refused (ENOSYS), as a seccomp profile (Docker's default) or a kernel without io_uring does",
      code: 'ERR_IOURING_UNAVAILABLE',
      errno: -38,
    });
  });

  it('the sync layer still works under the filter', async () => {
    const run = await execa(refuse, ['EPERM', ...tsxEval(
      "const { native } = await import('./src/native.ts'); const [a, b] = native.socketpair('stream');" +
      "native.writev(a, [Buffer.from('plain')]); const buf = Buffer.alloc(5); native.readv(b, [buf]); console.log(buf.toString());")],
    { cwd: projectRoot, reject: false });
    expect(run.stdout).toBe('plain');
  });
});

describe('process exit with ops pending', () => {
  it('process.exit() with a blocked recv: no crash, no hang', async () => {
    const run = await execa(process.execPath, tsxEval(
      "const { Ring } = await import('./src/ring/index.ts'); const { native } = await import('./src/native.ts');" +
      "const ring = new Ring(); const [a, b] = native.socketpair('stream');" +
      "ring.recv(b, Buffer.alloc(16)); ring.readv(b, [Buffer.alloc(4)]); ring.submit();" +
      "setTimeout(() => { console.log('exiting'); process.exit(7); }, 50);").slice(1),
    { cwd: projectRoot, reject: false, timeout: 20_000 });
    expect(run.stdout).toBe('exiting');
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(7);
  });

  it('an uncaught exception with ops pending exits with the error', async () => {
    const run = await execa(process.execPath, tsxEval(
      "const { Ring } = await import('./src/ring/index.ts'); const { native } = await import('./src/native.ts');" +
      "const ring = new Ring(); const [a, b] = native.socketpair('stream'); ring.recv(b, Buffer.alloc(16));" +
      "setTimeout(() => { throw new Error('boom'); }, 50);").slice(1),
    { cwd: projectRoot, reject: false, timeout: 20_000 });
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain('boom');
    expect(run.stderr).not.toMatch(/Sanitizer|Segmentation|Aborted/);
  });
});

// Workers load the addon directly (no TypeScript loader in the worker).
const addonPath = join(projectRoot, process.env.IOLAB_ASAN === '1' ? 'build-asan/build/Release/iolab.node' : 'build/Release/iolab.node');
function runWorker(body: string): Worker & { exited: Promise<number> } {
  const worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    const native = require(${JSON.stringify(addonPath)});
    (async () => { ${body} })().catch((e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
  `, { eval: true });
  // Listen for 'exit' from the start: it can come before the last message is handled.
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  return Object.assign(worker, { exited });
}
const nextMessage = (w: Worker) => new Promise<any>((resolve, reject) => {
  w.once('message', resolve);
  w.once('error', reject);
});

describe('Ring in a worker thread', () => {
  it('works there, with its own event loop', async () => {
    const w = runWorker(`
      const ring = new native.Ring({ entries: 8 });
      const [a, b] = native.socketpair('stream');
      const sent = await ring.send(a, Buffer.from('from the worker'));
      const buf = Buffer.alloc(32);
      const n = await ring.recv(b, buf);
      await Promise.all(Array.from({ length: 100 }, () => ring.nop()));
      await ring.close();
      native.close(a); native.close(b);
      parentPort.postMessage({ sent, text: buf.toString('utf8', 0, n) });
    `);
    const msg = await nextMessage(w);
    expect(msg).toMatchObject({ sent: 15, text: 'from the worker' });
    await w.exited;
  });

  it('a worker terminated with a blocked recv cancels and waits for it', async () => {
    const w = runWorker(`
      const ring = new native.Ring();
      const [a, b] = native.socketpair('stream');
      for (let i = 0; i < 10; i++) ring.recv(b, Buffer.alloc(64));
      ring.submit();
      setTimeout(() => parentPort.postMessage({ pending: ring.inFlight, live: native.liveObjects(), fds: [a, b] }), 20);
    `);
    const msg = await nextMessage(w);
    expect(msg.pending).toBe(10);
    expect(msg.live.ringOps).toBeGreaterThanOrEqual(10);
    await w.terminate();
    expect(native.liveObjects()).toMatchObject({ rings: 0, ringOps: 0, heldBuffers: 0 });
    for (const fd of msg.fds) native.close(fd); // the worker's socketpair outlives it
  });

  it('each thread has its own RingClosedError class; a worker exiting leaves the main thread\'s alone', async () => {
    const w = runWorker(`
      class WorkerClosed extends Error { constructor(m) { super(m); this.name = 'WorkerClosed'; } }
      const ring = new native.Ring();
      await ring.close();
      let first;
      try { ring.nop(); } catch (e) { first = e; } // no class registered in this thread yet
      native.ringSetClosedErrorClass(WorkerClosed);
      let thrown;
      try { ring.nop(); } catch (e) { thrown = e; }
      parentPort.postMessage({ first: first.name + ':' + first.code, thrown: thrown instanceof WorkerClosed, message: thrown.message });
    `);
    expect(await nextMessage(w)).toEqual({ first: 'RingClosedError:ERR_RING_CLOSED', thrown: true, message: 'the Ring is closed' });
    expect(await w.exited).toBe(0);
    const ring = new Ring({ entries: 4 });
    const pending = ring.nop();
    await ring.close();
    await pending.catch(() => {});
    await expect(ring.nop()).rejects.toThrow(RingClosedError);
  });

  it('a worker terminated with ops in flight, where CANCEL_ANY is refused: each op is cancelled, nothing is left', async () => {
    const w = runWorker(`
      const ring = new native.Ring({ entries: 8 });
      native.ringTestRefuseCancelAny(ring);
      const [a, b] = native.socketpair('stream');
      for (let i = 0; i < 30; i++) ring.recv(b, Buffer.alloc(64));
      ring.submit();
      setTimeout(() => parentPort.postMessage({ pending: ring.inFlight, fds: [a, b] }), 20);
    `);
    const msg = await nextMessage(w);
    expect(msg.pending).toBe(30);
    const start = Date.now();
    await w.terminate();
    // all 30 came back well before the 3 s teardown deadline (after which ops are leaked)
    expect(Date.now() - start).toBeLessThan(2500);
    expect(native.liveObjects()).toMatchObject({ rings: 0, ringOps: 0, heldBuffers: 0 });
    for (const fd of msg.fds) native.close(fd);
  });

  it('a worker that returns with an idle Ring exits on its own', async () => {
    const w = runWorker(`
      const ring = new native.Ring();
      await ring.nop();
      parentPort.postMessage('done');
    `);
    expect(await nextMessage(w)).toBe('done');
    const code = await w.exited;
    expect(code).toBe(0);
    expect(native.liveObjects()).toMatchObject({ rings: 0, ringOps: 0 });
  });
});
