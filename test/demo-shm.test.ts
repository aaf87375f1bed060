// `iolab shm write|read|unlink` across processes: exact output, plain bytes any program reads,
// bad input in one line with nothing left in /dev/shm or destroyed, an object of another uid,
// and a reader racing a writer that keeps shrinking the object.
import { afterAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { closeSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { native } from '../src/native.js';
import { buildFixture, shortTempDir } from './support/temp.js';
import { cli, runCliAs, shmObjects, uniqueShmName } from './support/demo.js';

const prefix = `iolab-test-shm-${process.pid}-`;
const tmp = shortTempDir('iolab-dshm-');
afterAll(() => {
  for (const name of shmObjects(prefix)) native.shmUnlink(`/${name}`);
  tmp.cleanup();
});
const { O_CREAT, O_EXCL, O_RDWR } = constants;

describe('iolab shm', () => {
  it('write in one process, read in another shows the text; the object holds just the bytes, zero-filled', async () => {
    const name = uniqueShmName('shm');
    const text = 'shared by two processes: tabs\tand "quotes", é €';
    const w = await cli(['shm', 'write', name, text]);
    expect(w).toEqual({ stdout: `wrote ${Buffer.byteLength(text)} bytes of text to ${name} (new 4096-byte shared-memory object)`, stderr: '', exitCode: 0 });
    // What any other program sees: the text from offset 0, then zeros to the object's size.
    const bytes = readFileSync(`/dev/shm${name}`);
    expect(bytes.length).toBe(4096);
    expect(bytes.subarray(0, Buffer.byteLength(text)).toString()).toBe(text);
    expect(bytes.subarray(Buffer.byteLength(text)).every((b) => b === 0)).toBe(true);
    expect(statSync(`/dev/shm${name}`).mode & 0o777).toBe(0o600);

    const r = await cli(['shm', 'read', name]);
    expect(r).toEqual({ stdout: 'shared by two processes: tabs\\tand "quotes", é €', stderr: '', exitCode: 0 });
    for (const variant of [[], ['--io-uring']]) {
      const json = await cli(['shm', 'read', name, '--length', '8', '--json', ...variant]);
      expect(JSON.parse(json.stdout)).toEqual({ name, size: 4096, read: 8, end: 'limit', bytes: 8, text: 'shared b', base64: Buffer.from('shared b').toString('base64') });
    }

    // An existing object is rewritten only with --force; every byte past the new text is zero again.
    const again = await cli(['shm', 'write', name.slice(1), 'short']);
    expect(again).toEqual({ stdout: '', stderr: `iolab: shared-memory object ${name} exists; left untouched (use --force to overwrite it)`, exitCode: 1 });
    const w2 = await cli(['shm', 'write', name.slice(1), 'short', '--size', '8k', '--json', '--force', '--io-uring']);
    expect(JSON.parse(w2.stdout)).toEqual({ name, bytes: 5, size: 8192, created: false });
    const after = readFileSync(`/dev/shm${name}`);
    expect(after.length).toBe(8192);
    expect(after.subarray(0, 5).toString()).toBe('short');
    expect(after.subarray(5).every((b) => b === 0)).toBe(true);
    expect((await cli(['shm', 'read', name, '--io-uring'])).stdout).toBe('short');

    const u = await cli(['shm', 'unlink', name]);
    expect(u).toEqual({ stdout: `unlinked ${name}`, stderr: '', exitCode: 0 });
    expect(existsSync(`/dev/shm${name}`)).toBe(false);
  });

  it('reads what another program wrote: up to the first NUL, or all of it, shown escaped; 1 byte is "1 byte"', async () => {
    const name = uniqueShmName('shm');
    const fd = native.shmOpen(name, O_CREAT | O_EXCL | O_RDWR, 0o600);
    try {
      native.ftruncate(fd, 7);
      native.writev(fd, [Buffer.from('a\x1b[2Jz\n')], 0); // no NUL: the whole object is the text
      expect((await cli(['shm', 'read', name])).stdout).toBe('a\\x1b[2Jz\\n');
      native.writev(fd, [Buffer.from('ab\0cd')], 0);
      expect(JSON.parse((await cli(['shm', 'read', name, '--json'])).stdout)).toMatchObject({ size: 7, read: 7, end: 'NUL', text: 'ab' });
      native.ftruncate(fd, 0);
      expect((await cli(['shm', 'read', name])).stdout).toBe('');
    } finally {
      closeSync(fd);
      native.shmUnlink(name);
    }
    const one = uniqueShmName('shm');
    expect((await cli(['shm', 'write', one, 'x', '--size', '1'])).stdout).toBe(`wrote 1 byte of text to ${one} (new 1-byte shared-memory object)`);
    native.shmUnlink(one);
  });

  it.each([
    [['shm', 'write', `/${prefix}a/b`, 'x'], `iolab: The shm name must contain no '/' after the first. Received '/${prefix}a/b' (${prefix.length + 4} bytes)`],
    [['shm', 'write', `/${prefix}a\nb`, 'x'], `iolab: ENOENT`],
    [['shm', 'write', '/..', 'x'], "iolab: The shm name must not be '/.' or '/..' (they name the folder /dev/shm and its parent, not an object). Received '/..' (3 bytes)"],
    [['shm', 'read', '..'], "iolab: The shm name must not be '/.' or '/..' (they name the folder /dev/shm and its parent, not an object). Received '/..' (3 bytes)"],
    [['shm', 'write', `/${prefix}big`, 'x', '--size', '1T'], /^iolab: --size 1 TiB is more than \/dev\/shm has free \([\d.]+ [KMG]iB\); choose a smaller size$/],
    [['shm', 'write', `/${prefix}small`, 'x'.repeat(20), '--size', '16'], 'iolab: the text is 20 bytes but --size is 16'],
    [['shm', 'read', `/${prefix}none\n`], `iolab: ENOENT: no such file or directory, shm_open '/${prefix}none\\n'`],
    [['shm', 'unlink', `/${prefix}none`], `iolab: ENOENT: no such file or directory, shm_unlink '/${prefix}none'`],
  ])('bad input %j: one line, exit 1, nothing created', async (args, message) => {
    const r = await cli(args as string[]);
    if (message === 'iolab: ENOENT') {
      // A newline is a valid byte of a name: the object is made, and its name is shown escaped.
      expect(r.stdout).toBe(`wrote 1 byte of text to /${prefix}a\\nb (new 4096-byte shared-memory object)`);
      expect((await cli(['shm', 'unlink', `/${prefix}a\nb`])).stdout).toBe(`unlinked /${prefix}a\\nb`);
      return;
    }
    expect(r.stderr.split('\n')).toHaveLength(1);
    if (message instanceof RegExp) expect(r.stderr).toMatch(message);
    else expect(r.stderr).toBe(message);
    expect(r).toMatchObject({ stdout: '', exitCode: 1 });
    expect(shmObjects(prefix)).toEqual([]);
  });

  it.runIf(process.getuid?.() === 0)('an object another uid owns is left untouched unless --force, even by root', async () => {
    const name = uniqueShmName('shm');
    const theirs = await runCliAs(['shm', 'write', name, 'theirs'], { uid: 65534, gid: 65534 });
    expect(theirs.exitCode).toBe(0);
    expect(statSync(`/dev/shm${name}`).uid).toBe(65534);
    const r = await cli(['shm', 'write', name, 'mine now']);
    expect(r).toEqual({ stdout: '', stderr: `iolab: shared-memory object ${name} exists and belongs to uid 65534; left untouched (use --force to overwrite it)`, exitCode: 1 });
    expect((await cli(['shm', 'read', name])).stdout).toBe('theirs');
    const forced = await cli(['shm', 'write', name, 'mine now', '--force']);
    expect(forced.stdout).toBe(`wrote 8 bytes of text to ${name} (existing 4096-byte shared-memory object)`);
    expect((await cli(['shm', 'read', name])).stdout).toBe('mine now');
    native.shmUnlink(name);
  });

  it('shm read racing a writer that keeps shrinking the object never dies of SIGBUS', async () => {
    const shrinker = buildFixture(tmp.path, 'shrink-loop');
    const name = uniqueShmName('shm');
    expect((await cli(['shm', 'write', name, 'x', '--size', '1m'])).exitCode).toBe(0);
    const racer = execa(shrinker, [name, '20000'], { reject: false });
    await new Promise<void>((resolve) => racer.stdout!.once('data', () => resolve()));
    try {
      for (let i = 0; i < 6; i++) {
        const r = await cli(['shm', 'read', name, ...(i % 2 ? ['--io-uring'] : [])]);
        expect({ exitCode: r.exitCode, stderr: r.stderr }).toEqual({ exitCode: 0, stderr: '' });
        expect(r.stdout).toMatch(/^x*$/); // empty, cut short, or all of the text: never a fault
      }
    } finally {
      racer.kill('SIGTERM');
      await racer;
      native.shmUnlink(name);
    }
  }, 60_000);
});
