// POSIX shm and mmap: name validation, errno errors, two mappings of one object, offsets, the
// object's end, and the life of a mapping (explicit unmap detaches; GC unmaps; never a crash).
import { describe, expect, it } from 'vitest';
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { execFileSync } from 'node:child_process';
import { execa } from 'execa';
import { constants as iolabConstants, ftruncate, mmap, shmOpen, shmUnlink } from '../src/index.js';
import { native, projectRoot } from '../src/native.js';
import { checkLeaksAfterAll, collectGarbage } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const { O_CREAT, O_EXCL, O_RDWR, O_RDONLY } = constants;
const tmp = shortTempDir('iolab-shm-');
const page = native.constants.PAGE_SIZE;
let unique = 0;
const shmName = () => `/iolab-test-${process.pid}-${unique++}`;

checkLeaksAfterAll(tmp);

/** A fresh shm object of `size` bytes, unlinked at once; fn gets its read-write fd. */
function withShm<T>(size: number, fn: (fd: number, name: string) => T): T {
  const name = shmName();
  const fd = native.shmOpen(name, O_CREAT | O_EXCL | O_RDWR, 0o600);
  try {
    native.ftruncate(fd, size);
    return fn(fd, name);
  } finally {
    closeSync(fd);
    try { native.shmUnlink(name); } catch { /* already unlinked by the test */ }
  }
}

function isCloexec(fd: number): boolean {
  const flags = /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1];
  return (parseInt(flags, 8) & 0o2000000) !== 0;
}

describe('shmOpen / shmUnlink / ftruncate', () => {
  it('creates an object with the mode asked, close-on-exec, sized by ftruncate', () => {
    withShm(1000, (fd, name) => {
      expect(isCloexec(fd)).toBe(true);
      const st = fstatSync(fd);
      expect(st.size).toBe(1000);
      expect(st.mode & 0o777).toBe(0o600);
      const again = native.shmOpen(name, O_RDONLY);
      expect(isCloexec(again)).toBe(true);
      expect(fstatSync(again).size).toBe(1000);
      closeSync(again);
      native.ftruncate(fd, 0);
      expect(fstatSync(fd).size).toBe(0);
    });
  });

  it("takes fs's flag strings: 'wx+' creates once, 'w+' creates or truncates, 'r+' and 'r' (the default) open what is there", () => {
    const name = shmName();
    const accessMode = (fd: number) => parseInt(/flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1], 8) & 3;
    const fds: number[] = [];
    try {
      expect(() => shmOpen(name, 'r+')).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'shm_open', path: name }));
      const created = shmOpen(name, 'wx+');
      fds.push(created);
      expect([accessMode(created), fstatSync(created).mode & 0o777]).toEqual([O_RDWR, 0o600]);
      ftruncate(created, 100);
      expect(() => shmOpen(name, 'wx+')).toThrow(expect.objectContaining({ code: 'EEXIST', syscall: 'shm_open', path: name }));
      expect(() => shmOpen(name, 'xw+')).toThrow(expect.objectContaining({ code: 'EEXIST' }));
      const both = shmOpen(name, 'r+');
      const reader = shmOpen(name);
      const named = shmOpen(name, 'r');
      fds.push(both, reader, named);
      expect([accessMode(both), accessMode(reader), accessMode(named)]).toEqual([O_RDWR, O_RDONLY, O_RDONLY]);
      expect(fstatSync(both).size).toBe(100);
      expect(() => mmap(reader, 100, { write: true })).toThrow(expect.objectContaining({ code: 'EACCES', syscall: 'mmap' }));
      const truncating = shmOpen(name, 'w+');
      fds.push(truncating);
      expect([accessMode(truncating), fstatSync(created).size]).toEqual([O_RDWR, 0]);
      expect(() => shmOpen(name, 'a+' as 'r')).toThrow(expect.objectContaining({
        name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE', message: "The argument 'flags' must be one of 'r', 'r+', 'w+', 'wx+', 'xw+'. Received type string ('a+')",
      }));
      expect(() => shmOpen(name, true as unknown as 'r')).toThrow(expect.objectContaining({
        code: 'ERR_INVALID_ARG_TYPE', message: 'The "flags" argument must be of type string or number. Received type boolean (true)',
      }));
      shmUnlink(name);
      const w = shmOpen(name, 'w+'); // creates what is missing
      fds.push(w);
      expect(fstatSync(w).size).toBe(0);
    } finally {
      for (const fd of fds) closeSync(fd);
      try { shmUnlink(name); } catch { /* unlinked above */ }
    }
  });

  it("still takes O_* bits as a number; constants has the O_* of Python's os module, and of fs.constants where it has one", () => {
    const o = Object.keys(iolabConstants).filter((k) => k.startsWith('O_'));
    expect(o.length).toBeGreaterThanOrEqual(15);
    const ours = Object.fromEntries(o.map((k) => [k, iolabConstants[k as keyof typeof iolabConstants]]));
    const python = JSON.parse(execFileSync('python3', ['-c', 'import json, os, sys; print(json.dumps({n: getattr(os, n) for n in sys.argv[1:]}))', ...o], { encoding: 'utf8' }));
    expect(ours).toEqual(python);
    for (const k of o) if (k in constants) expect([k, ours[k]]).toEqual([k, constants[k as keyof typeof constants]]);
    withShm(10, (fd, name) => {
      const again = shmOpen(name, iolabConstants.O_RDWR | iolabConstants.O_NOFOLLOW);
      expect(fstatSync(again).size).toBe(10);
      closeSync(again);
    });
  });

  it('validates names: one leading /, no other /, 2..255 bytes; says what is wrong, with the name escaped', () => {
    const bad: [string, string][] = [
      ['noslash', "must start with '/'. Received 'noslash' (7 bytes)"],
      ['', "must start with '/'. Received '' (0 bytes)"],
      ['/', "must have at least one byte after the '/'. Received '/' (1 byte)"],
      ['//x', "must contain no '/' after the first. Received '//x' (3 bytes)"],
      ['/a/b', "must contain no '/' after the first"],
      ['/.', "must not be '/.' or '/..' (they name the folder /dev/shm and its parent, not an object). Received '/.' (2 bytes)"],
      ['/..', "must not be '/.' or '/..'"],
      ['/a\0b', "must contain no NUL byte. Received '/a\\0b' (4 bytes)"],
      ['/' + 'x'.repeat(255), "must be at most 255 bytes long. Received '/xxxxxxxx"],
      ['/a\nb/\u202e\x1b[2J', "must contain no '/' after the first. Received '/a\\nb/\\xe2\\x80\\xae\\x1b[2J' (12 bytes)"],
      ['/grüße/x', "Received '/grüße/x' (10 bytes)"],
    ];
    for (const [name, message] of bad) {
      expect(() => native.shmOpen(name, O_RDONLY), name).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' }));
      expect(() => native.shmUnlink(name), name).toThrow(`The shm name ${message.startsWith('Received') ? '' : message}`);
      expect(() => native.shmUnlink(name), name).toThrow(message);
    }
    expect(() => native.shmOpen(5 as unknown as string, O_RDONLY)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    const longest = '/' + `${process.pid}`.padEnd(254, 'n');
    expect(Buffer.byteLength(longest)).toBe(255);
    const fd = native.shmOpen(longest, O_CREAT | O_EXCL | O_RDWR);
    closeSync(fd);
    native.shmUnlink(longest);
  });

  it('throws errno errors with code, errno, syscall and path', () => {
    const name = shmName();
    expect(() => native.shmOpen(name, O_RDWR)).toThrow(expect.objectContaining({ code: 'ENOENT', errno: -2, syscall: 'shm_open', path: name }));
    expect(() => native.shmUnlink(name)).toThrow(expect.objectContaining({ code: 'ENOENT', syscall: 'shm_unlink', path: name }));
    withShm(10, (_fd, existing) => {
      expect(() => native.shmOpen(existing, O_CREAT | O_EXCL | O_RDWR)).toThrow(expect.objectContaining({ code: 'EEXIST', syscall: 'shm_open', path: existing }));
    });
    expect(() => native.ftruncate(987654, 10)).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'ftruncate' }));
    expect(() => native.ftruncate(0, -1)).toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }));
  });
});

describe('mmap / munmap', () => {
  it('two mappings of one object see each other’s writes (and read(2) sees them too)', () => {
    withShm(2 * page, (fd, name) => {
      const other = native.shmOpen(name, O_RDWR);
      const a = native.mmap(fd, 2 * page, { write: true });
      const b = native.mmap(other, 2 * page, { write: true });
      const ro = native.mmap(other, page);
      expect(native.liveObjects().mappings).toBe(3);
      new Uint8Array(a).set(Buffer.from('written through a'), 10);
      expect(Buffer.from(b, 10, 17).toString()).toBe('written through a');
      expect(Buffer.from(ro, 10, 17).toString()).toBe('written through a');
      new Uint8Array(b)[page + 5] = 0xab;
      expect(new Uint8Array(a)[page + 5]).toBe(0xab);
      const viaRead = Buffer.alloc(17);
      readSync(other, viaRead, 0, 17, 10);
      expect(viaRead.toString()).toBe('written through a');
      for (const m of [a, b, ro]) native.munmap(m);
      closeSync(other);
      expect(native.liveObjects().mappings).toBe(0);
    });
  });

  it('a reading mapping is the object itself, PROT_READ: it sees later writes, and a store into it kills the process', async () => {
    withShm(page, (fd) => {
      const ro = native.mmap(fd, page);
      const rw = native.mmap(fd, page, { write: true });
      new Uint8Array(rw)[0] = 99;
      expect(new Uint8Array(ro)[0]).toBe(99); // MAP_SHARED: the object's page, not a copy
      native.munmap(ro);
      native.munmap(rw);
    });
    const name = shmName();
    const addon = join(projectRoot, process.env.IOLAB_ASAN === '1' ? 'build-asan/build/Release/iolab.node' : 'build/Release/iolab.node');
    const fd = native.shmOpen(name, O_CREAT | O_EXCL | O_RDWR, 0o600);
    try {
      native.ftruncate(fd, page);
      const child = await execa(process.execPath, ['-e', `
        const native = require(${JSON.stringify(addon)});
        const fd = native.shmOpen(${JSON.stringify(name)}, require('fs').constants.O_RDWR);
        new Uint8Array(native.mmap(fd, 4096))[0] = 1;`], { reject: false, env: process.env });
      expect(child.signal).toBe('SIGSEGV');
      const check = native.mmap(fd, page);
      expect(new Uint8Array(check)[0]).toBe(0); // the store never reached the object
      native.munmap(check);
    } finally {
      closeSync(fd);
      native.shmUnlink(name);
    }
  });

  it('maps at a page-aligned offset; rejects unaligned offsets, length 0 and ranges past the end', () => {
    withShm(3 * page + 100, (fd) => {
      const whole = native.mmap(fd, 3 * page + 100, { write: true });
      new Uint8Array(whole)[page] = 7;
      new Uint8Array(whole)[3 * page + 99] = 9;
      const part = native.mmap(fd, page, { offset: page });
      expect(part.byteLength).toBe(page);
      expect(new Uint8Array(part)[0]).toBe(7);
      const tail = native.mmap(fd, 100, { offset: 3 * page });
      expect(new Uint8Array(tail)[99]).toBe(9);
      const range = expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
      expect(() => native.mmap(fd, 10, { offset: 1 })).toThrow(range);
      expect(() => native.mmap(fd, 0)).toThrow(range);
      expect(() => native.mmap(fd, 3 * page + 101)).toThrow(range);
      expect(() => native.mmap(fd, 3 * page + 101)).toThrow(`object's size of ${3 * page + 100} bytes`);
      expect(() => native.mmap(fd, 101, { offset: 3 * page })).toThrow(range);
      expect(() => native.mmap(fd, 1, { offset: 4 * page })).toThrow(range);
      expect(() => native.mmap(fd, -1)).toThrow(range);
      expect(() => native.mmap(fd, 1, { write: 1 as unknown as boolean })).toThrow(TypeError);
      for (const m of [whole, part, tail]) native.munmap(m);
    });
    expect(native.liveObjects().mappings).toBe(0);
  });

  it('errno errors: bad fd (fstat), write mapping of a read-only fd (mmap EACCES)', () => {
    const file = join(tmp.path, 'plain.bin');
    writeFileSync(file, Buffer.alloc(page, 1));
    const fd = openSync(file, 'r');
    try {
      expect(() => native.mmap(987654, 10)).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'fstat' }));
      expect(() => native.mmap(fd, page, { write: true })).toThrow(expect.objectContaining({ code: 'EACCES', syscall: 'mmap' }));
      const m = native.mmap(fd, page); // a regular file maps too
      expect(new Uint8Array(m).every((x) => x === 1)).toBe(true);
      native.munmap(m);
    } finally {
      closeSync(fd);
    }
    expect(native.liveObjects().mappings).toBe(0);
  });

  it('after munmap the buffer is detached: use is a TypeError or empty, never a crash', () => {
    withShm(page, (fd) => {
      const m = native.mmap(fd, page, { write: true });
      const view = new Uint8Array(m);
      view[0] = 1;
      native.munmap(m);
      expect(m.byteLength).toBe(0);
      expect(view.length).toBe(0);
      expect(view[0]).toBeUndefined();
      view[0] = 5; // ignored, no fault
      expect(() => new Uint8Array(m)).toThrow(TypeError);
      expect(() => m.slice(0)).toThrow(TypeError);
      expect(() => native.munmap(m)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' }));
      expect(() => native.readv(fd, [view])).not.toThrow(); // a detached view is just empty
    });
  });

  it('munmap rejects buffers mmap did not make', () => {
    const invalid = expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' });
    expect(() => native.munmap(new ArrayBuffer(page))).toThrow(invalid);
    withShm(page, (fd) => {
      const m = native.mmap(fd, page);
      expect(() => native.munmap(m.slice(0))).toThrow(invalid); // a copy is not the mapping
      expect(() => native.munmap(new Uint8Array(m) as unknown as ArrayBuffer)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
      native.munmap(m);
    });
  });

  it('the GC finalizer unmaps a dropped mapping (counter back to zero)', async () => {
    const name = shmName();
    const fd = native.shmOpen(name, O_CREAT | O_EXCL | O_RDWR);
    native.shmUnlink(name);
    native.ftruncate(fd, page);
    (() => {
      for (let i = 0; i < 5; i++) new Uint8Array(native.mmap(fd, page, { write: true }))[0] = i;
    })();
    expect(native.liveObjects().mappings).toBe(5);
    const kept = native.mmap(fd, page);
    await collectGarbage();
    expect(native.liveObjects().mappings).toBe(1);
    expect(new Uint8Array(kept)[0]).toBe(4);
    native.munmap(kept);
    closeSync(fd);
    expect(native.liveObjects().mappings).toBe(0);
  });

  it('loads in a worker thread; mappings a worker leaves behind are unmapped when it exits', async () => {
    const addon = join(projectRoot, process.env.IOLAB_ASAN === '1' ? 'build-asan/build/Release/iolab.node' : 'build/Release/iolab.node');
    const name = shmName();
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      const { constants } = require('node:fs');
      const native = require(workerData.addon);
      const fd = native.shmOpen(workerData.name, constants.O_CREAT | constants.O_EXCL | constants.O_RDWR);
      native.shmUnlink(workerData.name);
      native.ftruncate(fd, native.constants.PAGE_SIZE);
      const kept = [];
      for (let i = 0; i < 3; i++) kept.push(native.mmap(fd, native.constants.PAGE_SIZE, { write: true }));
      new Uint8Array(kept[0])[0] = 42;
      native.munmap(kept[2]);
      native.close(fd); // the addon's fd: a worker's fs.closeSync would warn it did not open it
      parentPort.postMessage({ first: new Uint8Array(kept[1])[0], mappings: native.liveObjects().mappings });
      globalThis.keep = kept; // still mapped when the worker ends
    `;
    const worker = new Worker(code, { eval: true, workerData: { addon, name } });
    // listened for from the start: Node 24 can emit 'exit' before the message's listener has run
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    const message = await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    expect(message).toEqual({ first: 42, mappings: 2 });
    await exited;
    expect(native.liveObjects().mappings).toBe(0);
  });
});
