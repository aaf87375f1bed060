// memfds and seals (native/sys/memfd.cc): close-on-exec memfds, each seal doing what the kernel
// promises, getSeals on files that can and cannot carry seals, argument errors.
import { describe, expect, it } from 'vitest';
import { closeSync, fstatSync, openSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-memfd-');
checkLeaksAfterAll(tmp);
const { F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE } = native.seals;
const page = native.constants.PAGE_SIZE;

function isCloexec(fd: number): boolean {
  const flags = /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1];
  return (parseInt(flags, 8) & 0o2000000) !== 0;
}

function withMemfd<T>(fn: (fd: number) => T, options?: { allowSealing?: boolean }): T {
  const fd = native.memfdCreate('iolab-test', options);
  try {
    return fn(fd);
  } finally {
    closeSync(fd);
  }
}

describe('memfdCreate / addSeals / getSeals', () => {
  it('a close-on-exec regular file named memfd:<name>, with no seals yet', () => {
    withMemfd((fd) => {
      expect(isCloexec(fd)).toBe(true);
      expect(readlinkSync(`/proc/self/fd/${fd}`)).toBe('/memfd:iolab-test (deleted)');
      expect(fstatSync(fd).isFile()).toBe(true);
      expect(native.getSeals(fd)).toBe(0);
    });
  });

  it('sealed against shrinking, growing and writing: ftruncate and writes fail with EPERM, reads and PROT_READ maps work', () => {
    withMemfd((fd) => {
      native.ftruncate(fd, page);
      expect(native.writev(fd, [Buffer.from('sealed text')], 0)).toBe(11);
      native.addSeals(fd, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
      expect(native.getSeals(fd)).toBe(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
      const eperm = expect.objectContaining({ code: 'EPERM' });
      expect(() => native.ftruncate(fd, 0)).toThrow(eperm);
      expect(() => native.ftruncate(fd, 2 * page)).toThrow(eperm);
      expect(() => native.writev(fd, [Buffer.from('x')], 0)).toThrow(eperm);
      expect(() => native.mmap(fd, page, { write: true })).toThrow(expect.objectContaining({ code: 'EPERM', syscall: 'mmap' }));
      const m = native.mmap(fd, page);
      expect(Buffer.from(m, 0, 11).toString()).toBe('sealed text');
      native.munmap(m);
      native.addSeals(fd, F_SEAL_SEAL);
      expect(() => native.addSeals(fd, F_SEAL_GROW)).toThrow(expect.objectContaining({ code: 'EPERM', syscall: 'fcntl' }));
    });
  });

  it('F_SEAL_WRITE is refused while a writable shared mapping exists (EBUSY)', () => {
    withMemfd((fd) => {
      native.ftruncate(fd, page);
      const rw = native.mmap(fd, page, { write: true });
      expect(() => native.addSeals(fd, F_SEAL_WRITE)).toThrow(expect.objectContaining({ code: 'EBUSY' }));
      native.munmap(rw);
      native.addSeals(fd, F_SEAL_WRITE);
    });
  });

  it('getSeals: F_SEAL_SEAL for a memfd without sealing and for a shm_open object; undefined for a file elsewhere', () => {
    withMemfd((fd) => expect(native.getSeals(fd)).toBe(F_SEAL_SEAL), { allowSealing: false });
    const name = `/iolab-test-memfd-${process.pid}`;
    const shm = native.shmOpen(name, 0o102, 0o600); // O_CREAT | O_RDWR
    native.shmUnlink(name);
    expect(native.getSeals(shm)).toBe(F_SEAL_SEAL);
    closeSync(shm);
    const file = join(tmp.path, 'plain');
    writeFileSync(file, 'x');
    const fd = openSync(file, 'r');
    expect(native.getSeals(fd)).toBeUndefined();
    closeSync(fd);
    expect(() => native.getSeals(987654)).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'fcntl' }));
  });

  it('argument errors', () => {
    expect(() => native.memfdCreate(1 as unknown as string)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => native.memfdCreate('x'.repeat(250))).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => native.memfdCreate('a\0b')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => native.memfdCreate('x', { allowSealing: 1 as unknown as boolean })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    withMemfd((fd) => {
      expect(() => native.addSeals(fd, 1 << 10)).toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }));
      expect(() => native.addSeals(fd, '2' as unknown as number)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    });
    const name = 'x'.repeat(249);
    closeSync(native.memfdCreate(name));
  });
});
