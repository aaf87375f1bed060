// flock (native/sys/file_lock.cc) and O_NONBLOCK (native/sys/fd_flags.cc): a lock held by one open
// file is refused to another, in this process and in another one; O_NONBLOCK goes on and off.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native, projectRoot } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-flock-');
checkLeaksAfterAll(tmp);

function statusFlags(fd: number): number {
  return parseInt(/flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1], 8);
}
const O_NONBLOCK = 0o4000;

describe('flock', () => {
  it('an exclusive lock refuses a second open file until it is released or closed', () => {
    const file = join(tmp.path, 'a.lock');
    writeFileSync(file, '');
    const a = openSync(file, 'r');
    const b = openSync(file, 'r');
    try {
      expect(native.flock(a, 'exclusive')).toBe(true);
      expect(native.flock(b, 'exclusive')).toBe(false);
      expect(native.flock(b, 'shared')).toBe(false);
      expect(native.flock(a, 'unlock')).toBe(true);
      expect(native.flock(b, 'shared')).toBe(true);
      expect(native.flock(a, 'shared')).toBe(true);
      expect(native.flock(a, 'exclusive')).toBe(false);
    } finally {
      closeSync(a);
      closeSync(b);
    }
  });

  it('holds against another process; is released when the holder exits', async () => {
    const file = join(tmp.path, 'b.lock');
    writeFileSync(file, '');
    const addon = join(projectRoot, process.env.IOLAB_ASAN === '1' ? 'build-asan/build/Release/iolab.node' : 'build/Release/iolab.node');
    const holder = execa(process.execPath, ['-e', `
      const native = require(${JSON.stringify(addon)});
      const fd = require('fs').openSync(${JSON.stringify(file)}, 'r');
      if (!native.flock(fd, 'exclusive')) process.exit(3);
      process.stdout.write('locked\\n');
      setTimeout(() => {}, 60000);`], { reject: false, env: process.env });
    await new Promise<void>((resolve) => holder.stdout!.on('data', () => resolve()));
    const fd = openSync(file, 'r');
    try {
      expect(native.flock(fd, 'exclusive')).toBe(false);
      holder.kill('SIGKILL');
      await holder;
      expect(native.flock(fd, 'exclusive', { wait: true })).toBe(true);
    } finally {
      closeSync(fd);
    }
  });

  it('argument and errno errors', () => {
    expect(() => native.flock(987654, 'exclusive')).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'flock' }));
    expect(() => native.flock(0, 'both' as 'shared')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => native.flock(0, 'shared', { wait: 'no' as unknown as boolean })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });
});

describe('setNonBlocking', () => {
  it('turns O_NONBLOCK on and off, leaving the other flags', () => {
    const file = join(tmp.path, 'c');
    writeFileSync(file, 'x');
    const fd = openSync(file, 'a');
    try {
      const before = statusFlags(fd);
      expect(before & O_NONBLOCK).toBe(0);
      native.setNonBlocking(fd, true);
      expect(statusFlags(fd)).toBe(before | O_NONBLOCK);
      native.setNonBlocking(fd, true);
      native.setNonBlocking(fd, false);
      expect(statusFlags(fd)).toBe(before);
    } finally {
      closeSync(fd);
    }
    expect(() => native.setNonBlocking(987654, false)).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'fcntl' }));
    expect(() => native.setNonBlocking(0, 1 as unknown as boolean)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });
});
