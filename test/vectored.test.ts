// readv/writev/preadv/pwritev against real files: byte-exact results, short transfers, the
// IOV_MAX bound, argument errors and errno errors shaped like Node's.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-vec-');
const content = Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 7 + 3) & 0xff));
const file = join(tmp.path, 'data.bin');

checkLeaksAfterAll(tmp, () => {
  writeFileSync(file, content);
});

function withFd<T>(path: string, flags: string, fn: (fd: number) => T): T {
  const fd = openSync(path, flags);
  try {
    return fn(fd);
  } finally {
    closeSync(fd);
  }
}

/** Splits `total` bytes into buffers at the given cut points (zero-length pieces allowed). */
function splitBuffers(total: number, cuts: number[]): Buffer[] {
  const points = [0, ...cuts.map((c) => c % (total + 1)).sort((a, b) => a - b), total];
  return points.slice(1).map((end, i) => Buffer.alloc(end - points[i]));
}

describe('readv', () => {
  it('scatters the file into the buffers in order', () => {
    const bufs = [Buffer.alloc(32), Buffer.alloc(64), Buffer.alloc(128)];
    const n = withFd(file, 'r', (fd) => native.readv(fd, bufs));
    expect(n).toBe(224);
    expect(Buffer.concat(bufs)).toEqual(content.subarray(0, 224));
  });

  it('reads from a position (number or bigint) with preadv, not moving the file offset', () => {
    withFd(file, 'r', (fd) => {
      const a = Buffer.alloc(10);
      expect(native.readv(fd, [a], 100)).toBe(10);
      expect(a).toEqual(content.subarray(100, 110));
      const b = Buffer.alloc(5);
      expect(native.readv(fd, [b], 295n)).toBe(5);
      expect(b).toEqual(content.subarray(295, 300));
      const c = Buffer.alloc(4);
      expect(native.readv(fd, [c])).toBe(4); // the offset is still 0
      expect(c).toEqual(content.subarray(0, 4));
    });
  });

  it('returns a short read at EOF as is, and 0 past it', () => {
    withFd(file, 'r', (fd) => {
      const bufs = [Buffer.alloc(200), Buffer.alloc(200)];
      expect(native.readv(fd, bufs)).toBe(300);
      expect(Buffer.concat(bufs).subarray(0, 300)).toEqual(content);
      expect(native.readv(fd, [Buffer.alloc(8)])).toBe(0);
      expect(native.readv(fd, [Buffer.alloc(8)], 1000)).toBe(0);
    });
  });

  it('accepts 0 buffers, zero-length buffers, TypedArrays at an offset and DataViews', () => {
    withFd(file, 'r', (fd) => {
      expect(native.readv(fd, [])).toBe(0);
      const backing = new ArrayBuffer(16);
      const u32 = new Uint32Array(backing, 4, 2); // bytes 4..12
      const dv = new DataView(backing, 12, 4);
      const n = native.readv(fd, [Buffer.alloc(0), u32, new Uint8Array(0), dv], 0);
      expect(n).toBe(12);
      expect(Buffer.from(backing, 4, 12)).toEqual(content.subarray(0, 12));
      expect(Buffer.from(backing, 0, 4)).toEqual(Buffer.alloc(4));
    });
  });

  it('reads into views over a SharedArrayBuffer and multi-byte TypedArrays', () => {
    withFd(file, 'r', (fd) => {
      const shared = new SharedArrayBuffer(24);
      const f64 = new Float64Array(shared, 8, 1);
      const dv = new DataView(shared, 16, 8);
      expect(native.readv(fd, [new Uint8Array(shared, 0, 8), f64, dv], 0)).toBe(24);
      expect(Buffer.from(new Uint8Array(shared))).toEqual(content.subarray(0, 24));
    });
  });

  it('exports the limits it checks against, as the system reports them', () => {
    const getconf = (name: string) => Number(execFileSync('getconf', [name], { encoding: 'utf8' }).trim());
    expect(native.constants.IOV_MAX).toBe(getconf('IOV_MAX'));
    expect(native.constants.PAGE_SIZE).toBe(getconf('PAGESIZE'));
    expect(native.constants).toMatchObject({ SCM_MAX_FD: 253, UNIX_PATH_MAX: 107, UNIX_ABSTRACT_MAX: 108, IORING_MAX_ENTRIES: 32768 });
    expect(Object.isFrozen(native.constants)).toBe(true);
  });

  it('takes exactly IOV_MAX buffers and rejects one more with a RangeError', () => {
    const { IOV_MAX } = native.constants;
    withFd(file, 'r', (fd) => {
      const bufs = Array.from({ length: IOV_MAX }, () => Buffer.alloc(1));
      expect(native.readv(fd, bufs, 0)).toBe(300);
      expect(Buffer.concat(bufs.slice(0, 300))).toEqual(content);
      const tooMany = Array.from({ length: IOV_MAX + 1 }, () => Buffer.alloc(1));
      expect(() => native.readv(fd, tooMany)).toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }));
      expect(() => native.writev(fd, tooMany)).toThrow(RangeError);
    });
  });

  it('rejects bad arguments with Node-style TypeError/RangeError', () => {
    const typeErr = expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
    const rangeErr = expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
    const any = native as unknown as Record<string, (...args: unknown[]) => unknown>;
    expect(() => any.readv('3', [Buffer.alloc(1)])).toThrow(typeErr);
    expect(() => any.readv(undefined, [Buffer.alloc(1)])).toThrow(typeErr);
    expect(() => native.readv(-1, [Buffer.alloc(1)])).toThrow(rangeErr);
    expect(() => native.readv(1.5, [Buffer.alloc(1)])).toThrow(rangeErr);
    expect(() => native.readv(2 ** 31, [Buffer.alloc(1)])).toThrow(rangeErr);
    expect(() => any.readv(0, Buffer.alloc(1))).toThrow(typeErr);
    expect(() => any.readv(0, ['text'])).toThrow(typeErr);
    expect(() => any.readv(0, [new ArrayBuffer(4)])).toThrow(typeErr);
    expect(() => any.writev(0, [Buffer.alloc(1), null])).toThrow(typeErr);
    expect(() => native.readv(0, [Buffer.alloc(1)], -1)).toThrow(rangeErr);
    expect(() => native.readv(0, [Buffer.alloc(1)], -1n)).toThrow(rangeErr);
    expect(() => native.readv(0, [Buffer.alloc(1)], 1.5)).toThrow(rangeErr);
    expect(() => native.readv(0, [Buffer.alloc(1)], 2n ** 63n)).toThrow(rangeErr);
    expect(() => any.readv(0, [Buffer.alloc(1)], '0')).toThrow(typeErr);
  });

  it('throws errno errors with code, errno, syscall', () => {
    const bad = () => native.readv(987654, [Buffer.alloc(1)]);
    expect(bad).toThrow(expect.objectContaining({ code: 'EBADF', errno: -9, syscall: 'readv' }));
    expect(bad).toThrow(/^EBADF: .*, readv$/);
    const dir = join(tmp.path, 'dir');
    mkdirSync(dir);
    withFd(dir, 'r', (fd) => {
      expect(() => native.readv(fd, [Buffer.alloc(4)])).toThrow(expect.objectContaining({ code: 'EISDIR', errno: -21, syscall: 'readv' }));
      expect(() => native.readv(fd, [Buffer.alloc(4)], 0)).toThrow(expect.objectContaining({ code: 'EISDIR', syscall: 'preadv' }));
    });
    withFd(file, 'r', (fd) => {
      expect(() => native.writev(fd, [Buffer.from('x')])).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'writev' }));
      expect(() => native.writev(fd, [Buffer.from('x')], 0)).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'pwritev' }));
    });
    const [a, b] = native.socketpair('stream');
    try {
      expect(() => native.readv(a, [Buffer.alloc(1)], 0)).toThrow(expect.objectContaining({ code: 'ESPIPE', syscall: 'preadv' }));
    } finally {
      native.close(a);
      native.close(b);
    }
  });

  it('property: readv into a random split of buffers yields exactly the file bytes', () => {
    withFd(file, 'r', (fd) => {
      fc.assert(
        fc.property(fc.nat(content.length + 50), fc.array(fc.nat(), { maxLength: 40 }), fc.nat(content.length + 10), (total, cuts, position) => {
          const bufs = splitBuffers(total, cuts);
          const n = native.readv(fd, bufs, position);
          const expected = content.subarray(Math.min(position, content.length), Math.min(position + total, content.length));
          expect(n).toBe(expected.length);
          expect(Buffer.concat(bufs).subarray(0, n)).toEqual(expected);
        }),
        { numRuns: 150 },
      );
    });
  });
});

describe('writev', () => {
  it('gathers the buffers into the file in order, at the offset or at a position', () => {
    const out = join(tmp.path, 'out.bin');
    withFd(out, 'w', (fd) => {
      expect(native.writev(fd, [Buffer.from('hello '), Buffer.alloc(0), new TextEncoder().encode('world')])).toBe(11);
      expect(native.writev(fd, [Buffer.from('HE')], 0)).toBe(2);
      expect(native.writev(fd, [Buffer.from('!')])).toBe(1); // the offset moved on to 11
      expect(native.writev(fd, [Buffer.from('Z')], 20n)).toBe(1);
      expect(native.writev(fd, [])).toBe(0);
    });
    expect(readFileSync(out)).toEqual(Buffer.concat([Buffer.from('HEllo world!'), Buffer.alloc(8), Buffer.from('Z')]));
  });

  it('property: writev of random pieces writes exactly their concatenation', () => {
    const out = join(tmp.path, 'prop.bin');
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 40 }), fc.option(fc.nat(100), { nil: undefined }), (pieces, position) => {
        writeFileSync(out, '');
        const n = withFd(out, 'r+', (fd) => native.writev(fd, pieces, position));
        const joined = Buffer.concat(pieces);
        expect(n).toBe(joined.length);
        const expected = position === undefined || joined.length === 0 ? joined : Buffer.concat([Buffer.alloc(position), joined]);
        expect(readFileSync(out)).toEqual(expected);
      }),
      { numRuns: 150 },
    );
  });
});
