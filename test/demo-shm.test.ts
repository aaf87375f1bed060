// `iolab shm write|read|unlink` across processes: exact output, the bad inputs of issue 2, and
// that nothing is left in /dev/shm or destroyed.
import { afterAll, describe, expect, it } from 'vitest';
import { constants, existsSync } from 'node:fs';
import { native } from '../src/native.js';
import { cli, shmObjects, uniqueShmName } from './support/demo.js';

const prefix = `iolab-test-shm-${process.pid}-`;
afterAll(() => {
  for (const name of shmObjects(prefix)) native.shmUnlink(`/${name}`);
});

describe('iolab shm', () => {
  it('write in one process, read in another prints exactly the text; unlink removes it', async () => {
    const name = uniqueShmName('shm');
    const text = 'shared by two processes: tabs\tand "quotes", é €';
    const w = await cli(['shm', 'write', name, text]);
    expect(w).toEqual({ stdout: `wrote ${Buffer.byteLength(text)} bytes of text to ${name} (new 4096-byte shared-memory object)`, stderr: '', exitCode: 0 });
    expect(existsSync(`/dev/shm${name}`)).toBe(true);

    const r = await cli(['shm', 'read', name]);
    expect(r).toEqual({ stdout: text, stderr: '', exitCode: 0 });

    // A second write to an object iolab wrote replaces the text; --json shows the sizes.
    const w2 = await cli(['shm', 'write', name.slice(1), 'short', '--size', '8k', '--json']);
    expect(JSON.parse(w2.stdout)).toEqual({ name, bytes: 5, size: 8192, created: false });
    const r2 = await cli(['shm', 'read', name, '--length', '16', '--json']);
    expect(JSON.parse(r2.stdout)).toEqual({ name, size: 8192, mapped: 16, bytes: 5, text: 'short' });

    const u = await cli(['shm', 'unlink', name]);
    expect(u).toEqual({ stdout: `unlinked ${name}`, stderr: '', exitCode: 0 });
    expect(existsSync(`/dev/shm${name}`)).toBe(false);
  });

  it('mapping past the object\'s end, a too-small mapping, missing objects: one line each', async () => {
    const name = uniqueShmName('shm');
    expect((await cli(['shm', 'write', name, 'hello'])).exitCode).toBe(0);
    const past = await cli(['shm', 'read', name, '--length', '4097']);
    expect(past.stderr).toMatch(/^iolab: [^\n]*\[0, 4097\)[^\n]*4096 bytes$/);
    expect(past.exitCode).toBe(1);
    const cut = await cli(['shm', 'read', name, '--length', '10']);
    expect(cut.stderr).toBe(`iolab: shared-memory object ${name}: the record says 5 bytes of text but only 2 follow its header in the mapped 10 bytes`);
    native.shmUnlink(name);
    const gone = await cli(['shm', 'read', name]);
    expect(gone.stderr).toBe(`iolab: ENOENT: no such file or directory, shm_open '${name}'`);
    expect(gone.exitCode).toBe(1);
  });

  it('a name with a second "/" is refused in one line and nothing is created', async () => {
    const r = await cli(['shm', 'write', `/${prefix}a/b`, 'x']);
    expect(r.stderr.split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^iolab: The shm name must start with one '\/', contain no other '\/'/);
    expect(r.exitCode).toBe(1);
    expect(shmObjects(prefix)).toEqual([]);
  });

  it('an object iolab did not write is left untouched unless --force; a text larger than --size is refused', async () => {
    const name = uniqueShmName('shm');
    const fd = native.shmOpen(name, constants.O_CREAT | constants.O_EXCL | constants.O_RDWR, 0o600);
    try {
      native.ftruncate(fd, 100);
      const mapping = native.mmap(fd, 100, { write: true });
      new Uint8Array(mapping).fill(7);
      native.munmap(mapping);
      const r = await cli(['shm', 'write', name, 'mine now']);
      expect(r.stderr).toBe(`iolab: shared-memory object ${name} exists and was not written by iolab; left untouched (use --force to overwrite it)`);
      expect(r.exitCode).toBe(1);
      const after = native.mmap(fd, 100);
      expect(new Uint8Array(after).every((b) => b === 7)).toBe(true);
      native.munmap(after);

      const big = await cli(['shm', 'write', name, 'x'.repeat(20), '--size', '16', '--force']);
      expect(big.stderr).toBe('iolab: the text needs 28 bytes (8-byte header + 20 bytes of text) but --size is 16');
      const forced = await cli(['shm', 'write', name, 'mine now', '--force']);
      expect(forced.stdout).toBe(`wrote 8 bytes of text to ${name} (existing 4096-byte shared-memory object)`);
      expect((await cli(['shm', 'read', name])).stdout).toBe('mine now');
    } finally {
      native.close(fd);
      native.shmUnlink(name);
    }
  });
});
