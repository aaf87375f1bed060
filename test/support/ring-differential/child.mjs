// The child of test/ring-differential.test.ts: runs the cases the parent sends (IPC), each
// twice, on twin fds with the same content and the same peer timing: once through a Ring op
// and once through the sync call, and answers with both outcomes (the value or errno code, what
// the views hold, what is left to read from the fd). Plain JS over the compiled package (dist/),
// so that a new child after a crash starts in a fraction of a second. A crash kills only this
// process: the parent counts the case it was running as failed and starts another child.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import {
  Ring, close, ftruncate, memfdCreate, mmap, munmap, readvSync, recvmsg, setNonBlocking, socketpair, waitFd, writevSync,
} from '../../../dist/index.js';

const dir = process.env.IOLAB_DIFF_DIR;
const CONTENT = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/');
const NOW = CONTENT.subarray(0, 6); // what a stream peer writes before the call ('later': then the rest)
const SKIP = 5; // a file's position is here when the call starts
let fileCount = 0;
let fifo;

const codeOf = (e) => e?.code ?? String(e?.message ?? e);

/** Opens one end for the op and, for streams, the peer end; `kind` as in the case. */
function openFd(kind, cleanup) {
  if (kind === 'file' || kind === 'memfd') {
    let fd;
    if (kind === 'file') {
      const path = join(dir, `diff-${process.pid}-${fileCount++}`);
      fs.writeFileSync(path, CONTENT);
      fd = fs.openSync(path, 'r');
      fs.unlinkSync(path);
    } else {
      const m = memfdCreate('iolab-diff');
      writevSync(m, [CONTENT]);
      fd = fs.openSync(`/proc/self/fd/${m}`, 'r'); // its own file position, at 0
      close(m);
    }
    readvSync(fd, [Buffer.alloc(SKIP)]); // the file position is SKIP when the call starts
    cleanup.push(() => close(fd));
    return { fd, peer: undefined };
  }
  if (kind === 'pipe') {
    // one FIFO for the child's life: empty again once both ends are closed
    if (fifo === undefined) {
      fifo = join(dir, `fifo-${process.pid}-${randomUUID()}`); // (a crashed child's may be left)
      execFileSync('mkfifo', [fifo]);
    }
    const fd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    const peer = fs.openSync(fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    setNonBlocking(fd, false);
    cleanup.push(() => { close(fd); close(peer); });
    return { fd, peer };
  }
  const [fd, peer] = socketpair(kind === 'seqpacket' ? 'seqpacket' : 'stream');
  cleanup.push(() => { close(fd); close(peer); });
  return { fd, peer };
}

/** Views of `sizes` bytes in the case's kind of memory. */
function makeViews(memory, sizes, cleanup) {
  if (memory === 'mapped' || memory === 'readOnlyMapped') {
    const m = memfdCreate('iolab-diff-map');
    ftruncate(m, 4096);
    const buffer = mmap(m, 4096, { write: memory === 'mapped' });
    close(m);
    cleanup.push(() => munmap(buffer));
    let at = 0;
    return sizes.map((n) => { const v = new Uint8Array(buffer, at, n); at += n; return v; });
  }
  return sizes.map((n) => {
    if (memory === 'shared') return new Uint8Array(new SharedArrayBuffer(n));
    if (memory === 'dataView') return new DataView(new ArrayBuffer(n));
    if (memory === 'detached') {
      const v = new Uint8Array(n);
      structuredClone(v.buffer, { transfer: [v.buffer] });
      return v;
    }
    if (memory === 'shrunk') {
      const buffer = new ArrayBuffer(n, { maxByteLength: n });
      const v = new Uint8Array(buffer);
      buffer.resize(n >> 1);
      return v;
    }
    return Buffer.alloc(n);
  });
}

const hex = (v) => (v.byteLength === 0 ? '' : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex'));
const settle = (p) => p.then((value) => ({ value }), (e) => ({ error: codeOf(e), results: e?.results?.map((r) => (r instanceof Error ? codeOf(r) : r)) }));

/** The peer writes the rest, once: a stream the bytes after NOW, a seqpacket a second message. */
function writeRest(c, end) {
  if (end.peer === undefined || end.restWritten) return;
  end.restWritten = true;
  writevSync(end.peer, [c.fd === 'seqpacket' ? CONTENT.subarray(NOW.length, NOW.length + 20) : CONTENT.subarray(NOW.length)]);
}

/** The requests of a readvBatch: two, at the position (a number: then 8 further on). */
function requests(c, views) {
  return views.map((v, i) => {
    const r = { buffers: [v] };
    if (c.position === 'null') r.position = null;
    else if (c.position === 'minus1') r.position = -1;
    else if (typeof c.position === 'number') r.position = c.position + 8 * i;
    return r;
  });
}

const ringPosition = (p) => (p === 'omitted' ? undefined : p === 'null' ? null : p === 'minus1' ? -1 : p);
// The sync calls take no -1, and null is no position: the Ring's file position is no position
// for them. syncUnpositioned reads a socket or pipe as a stream whatever the position;
// syncZeroAsStream only the reads at 0, which the kernel takes as no position on a stream.
const syncPosition = (p, i, side) => {
  if (typeof p !== 'number' || side === 'syncUnpositioned') return undefined;
  const at = p + 8 * i;
  return side === 'syncZeroAsStream' && at === 0 ? undefined : at;
};

async function runRing(c, end, views) {
  const ring = new Ring({ entries: 4 });
  try {
    if (c.call === 'readvBatchBounce') for (let i = 0; i < 4; i++) void ring.nop(); // the SQ full: no direct reads
    const position = ringPosition(c.position);
    let p;
    if (c.call === 'read') p = ring.read(end.fd, views[0], position);
    else if (c.call === 'readv' || c.call === 'readvMany') p = ring.readv(end.fd, views, position);
    else if (c.call === 'recv') p = ring.recv(end.fd, views[0]);
    else p = ring.readvBatch(end.fd, requests(c, views));
    ring.submit();
    let outcome = settle(p);
    if (c.timing === 'later') {
      await new Promise((r) => setTimeout(r, 5));
      writeRest(c, end);
    }
    outcome = await Promise.race([outcome, new Promise((r) => setTimeout(() => r({ error: 'never settled' }), 2000))]);
    return outcome;
  } finally {
    await ring.close();
  }
}

function runSync(c, end, views, side) {
  const readable = () => end.peer === undefined || waitFd(end.fd, 'read', 0);
  const once = (list, pos) => {
    if (!readable()) writeRest(c, end); // it would wait: the peer's rest comes
    if (c.call === 'recv') return recvmsg(end.fd, list).bytesRead;
    return readvSync(end.fd, list, pos);
  };
  try {
    if (c.call !== 'readvBatch' && c.call !== 'readvBatchBounce') return { value: once(views, syncPosition(c.position, 0, side)) };
    const results = [];
    let failed;
    views.forEach((v, i) => {
      try {
        results.push(once([v], syncPosition(c.position, i, side)));
      } catch (e) {
        results.push(codeOf(e));
        failed ??= codeOf(e);
      }
    });
    return failed === undefined ? { value: results } : { error: failed, results };
  } catch (e) {
    return { error: codeOf(e) };
  }
}

/** What is left to read from the fd (a file: from its position). */
function leftOf(end) {
  if (end.peer !== undefined) setNonBlocking(end.fd, true);
  const buf = Buffer.alloc(256);
  try {
    const n = readvSync(end.fd, [buf]);
    return buf.subarray(0, n).toString('hex');
  } catch (e) {
    return codeOf(e);
  }
}

async function runCase(c) {
  const sides = {};
  const stream = c.fd === 'stream' || c.fd === 'seqpacket' || c.fd === 'pipe';
  const alternatives = stream && typeof c.position === 'number' ? ['syncUnpositioned', 'syncZeroAsStream'] : [];
  for (const side of ['ring', 'sync', ...alternatives]) {
    const cleanup = [];
    try {
      const end = openFd(c.fd, cleanup);
      if (end.peer !== undefined) writevSync(end.peer, [NOW]);
      if (c.timing === 'now') writeRest(c, end);
      const views = makeViews(c.memory, c.sizes, cleanup);
      let outcome;
      if (side === 'ring') outcome = await runRing(c, end, views);
      else outcome = runSync(c, end, views, side);
      writeRest(c, end); // (the sync call did not need it: it comes after, as to the Ring)
      sides[side] = { ...outcome, views: views.map(hex), left: leftOf(end) };
    } catch (e) {
      sides[side] = { threw: codeOf(e) };
    } finally {
      for (const f of cleanup.reverse()) f();
    }
  }
  return sides;
}

process.on('exit', () => {
  if (fifo !== undefined) fs.rmSync(fifo, { force: true });
});
process.on('message', async (c) => {
  process.send({ outcome: await runCase(c) });
});
process.send({ ready: true });
