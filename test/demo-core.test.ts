// The demos' building blocks, in process (no CLI spawns): showing bytes safely, splitting a
// read over buffers, looping over short writes, the text at a file's start, and runReadv/runWritev on real
// files. fast-check for everything that splits or joins bytes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { remainingAfter, writeAllVectored } from '../src/demos/common.js';
import { showBytes } from '../src/show-bytes.js';
import { readText } from '../src/demos/memory-objects.js';
import { formatReadv, readvJson, runReadv, splitRead } from '../src/demos/readv.js';
import { runWritev } from '../src/demos/writev.js';
import { UserError } from '../src/cli-util.js';
import { runReceiver, type ReceiverEvent } from '../src/demos/fdpass-receiver.js';
import { runSender } from '../src/demos/fdpass-sender.js';
import { plainIo } from '../src/demos/io.js';
import { native } from '../src/native.js';
import { sendmsg } from '../src/syscalls.js';
import { openFdCount, settledLiveObjects, zeroLiveObjects } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { unshowBytes } from './support/demo.js';

const tmp = shortTempDir('iolab-dc-');
let fdsBefore = 0;
let unique = 0;
const tempFile = () => join(tmp.path, `f${unique++}`);

beforeAll(() => { fdsBefore = openFdCount(); });
afterAll(async () => {
  expect(openFdCount()).toBe(fdsBefore);
  expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  tmp.cleanup();
});

describe('showBytes', () => {
  it('keeps text, escapes controls, backslash and bytes that are not printable UTF-8', () => {
    const bytes = Buffer.concat([Buffer.from('a b\\c\n\t\r\0'), Buffer.from([0x1b, 0x7f, 0xff, 0xc3]),
      Buffer.from('é€😀'), Buffer.from('\u202e\u200b\u0085')]);
    expect(showBytes(bytes)).toBe('a b\\\\c\\n\\t\\r\\0\\x1b\\x7f\\xff\\xc3é€😀' +
      '\\xe2\\x80\\xae\\xe2\\x80\\x8b\\xc2\\x85');
  });

  it('a multi-byte character cut by a buffer boundary shows as \\x escapes, never a garbled char', () => {
    const euro = Buffer.from('€');
    expect(showBytes(euro.subarray(0, 2))).toBe('\\xe2\\x82');
    expect(showBytes(euro.subarray(2))).toBe('\\xac');
  });

  it('is one line of visible text from which the bytes can be told back exactly', () => {
    fc.assert(fc.property(fc.oneof(fc.uint8Array({ maxLength: 200 }),
      fc.string({ unit: 'binary', maxLength: 60 }).map((s) => new TextEncoder().encode(s))), (bytes) => {
      const shown = showBytes(bytes);
      expect(shown).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
      expect(unshowBytes(shown)).toEqual(Buffer.from(bytes));
    }), { numRuns: 300 });
  });
});

describe('splitting and joining bytes over buffers', () => {
  const sizes = fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 8 });

  it('splitRead gives each buffer exactly the bytes that landed in it, in order', () => {
    fc.assert(fc.property(sizes, fc.nat(400), (sz, n) => {
      const buffers = sz.map((s) => new Uint8Array(s).fill(0xaa));
      const total = sz.reduce((a, b) => a + b, 0);
      const bytes = Math.min(n, total);
      const parts = splitRead(buffers, bytes);
      expect(parts.map((p) => p.size)).toEqual(sz);
      expect(parts.reduce((a, p) => a + p.data.byteLength, 0)).toBe(bytes);
      // only the last non-empty part may be partial; everything after it is empty
      const firstShort = parts.findIndex((p) => p.data.byteLength < p.size);
      if (firstShort >= 0) expect(parts.slice(firstShort + 1).every((p) => p.data.byteLength === 0)).toBe(true);
    }));
  });

  it('remainingAfter drops exactly `done` bytes from the front', () => {
    fc.assert(fc.property(fc.array(fc.uint8Array({ maxLength: 20 }), { maxLength: 6 }), fc.nat(), (pieces, k) => {
      const all = Buffer.concat(pieces);
      const done = all.length === 0 ? 0 : k % (all.length + 1);
      expect(Buffer.concat(remainingAfter(pieces, done))).toEqual(all.subarray(done));
    }));
  });

  it('writeAllVectored writes the concatenation of the pieces whatever short writes happen', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 30 }), { maxLength: 6 }),
      fc.array(fc.integer({ min: 1, max: 25 }), { minLength: 1 }), async (pieces, shortBy) => {
        const written: number[] = [];
        let call = 0;
        const result = await writeAllVectored(async (_fd, buffers) => {
          // a kernel that writes at most shortBy[call] bytes per call
          const limit = shortBy[call++ % shortBy.length];
          const flat = Buffer.concat(buffers).subarray(0, limit);
          written.push(...flat);
          return flat.length;
        }, -1, pieces);
        const all = Buffer.concat(pieces);
        expect(Buffer.from(written)).toEqual(all);
        expect(result.bytes).toBe(all.length);
      }));
  });

  it('readv of a file into a random split of buffers yields exactly the file\'s bytes', async () => {
    const file = tempFile();
    const content = Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 7) % 256));
    writeFileSync(file, content);
    await fc.assert(fc.asyncProperty(sizes, fc.option(fc.nat(700), { nil: undefined }), async (sz, offset) => {
      const result = await runReadv(file, sz, offset);
      const expected = content.subarray(offset ?? 0, (offset ?? 0) + sz.reduce((a, b) => a + b, 0));
      expect(result.bytes).toBe(expected.length);
      expect(Buffer.concat(result.buffers.map((b) => b.data))).toEqual(expected);
      const lines = formatReadv(result);
      expect(lines[0]).toBe(`Read ${expected.length} ${expected.length === 1 ? 'byte' : 'bytes'}:`);
      expect(Buffer.concat(lines.slice(1).map((l, i) => unshowBytes(l.slice(`buf${i + 1}: `.length))))).toEqual(expected);
      const json = readvJson(result);
      expect(Buffer.concat(json.buffers.map((b) => Buffer.from(b.base64, 'base64')))).toEqual(expected);
    }), { numRuns: 60 });
  });
});

describe('runWritev', () => {
  it('writev of random pieces writes exactly their concatenation, mode 0644', async () => {
    await fc.assert(fc.asyncProperty(fc.array(fc.string({ maxLength: 30 }), { minLength: 1, maxLength: 8 }), async (texts) => {
      const file = tempFile();
      const r = await runWritev(file, texts, 'create');
      expect(readFileSync(file, 'utf8')).toBe(texts.join(''));
      expect(r).toMatchObject({ bytes: Buffer.byteLength(texts.join('')), pieces: texts.length, calls: texts.join('') ? 1 : 0 });
      expect(statSync(file).mode & 0o777).toBe(0o644);
    }), { numRuns: 40 });
  });

  it('refuses an existing file without --append/--force and leaves it untouched', async () => {
    const file = tempFile();
    writeFileSync(file, 'precious');
    await expect(runWritev(file, ['x'], 'create')).rejects.toThrow(UserError);
    expect(readFileSync(file, 'utf8')).toBe('precious');
  });

  it('--append adds at the end; --force replaces atomically, keeps the mode, leaves no temp file', async () => {
    const file = tempFile();
    writeFileSync(file, 'one');
    chmodSync(file, 0o600);
    await runWritev(file, [' two', ' three'], 'append');
    expect(readFileSync(file, 'utf8')).toBe('one two three');
    const inodeBefore = statSync(file).ino;
    await runWritev(file, ['new ', 'text'], 'replace');
    expect(readFileSync(file, 'utf8')).toBe('new text');
    expect(statSync(file).ino).not.toBe(inodeBefore);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(tmp.path).filter((f) => f.includes('.tmp'))).toEqual([]);
  });

  it('a failing --force write leaves the old file and no temp file behind', async () => {
    const file = tempFile();
    writeFileSync(file, 'keep me');
    await expect(runWritev(file, ['a', 'b'], 'replace', { ...plainIo, writev: async () => { throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }); } }))
      .rejects.toThrow('EIO');
    expect(readFileSync(file, 'utf8')).toBe('keep me');
    expect(readdirSync(tmp.path).filter((f) => f.includes('.tmp'))).toEqual([]);
  });

  it('refuses a directory for every mode', async () => {
    const dir = tempFile();
    mkdirSync(dir);
    for (const mode of ['create', 'append', 'replace'] as const) {
      await expect(runWritev(dir, ['x'], mode)).rejects.toThrow(`${dir} is a directory, not a file`);
    }
  });
});

describe('the text at the start of a passed file (readText)', () => {
  const { F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE } = native.seals;
  it('mapped (sealed memfd) and read with pread (unsealed memfd) give the bytes up to the first NUL, within the limit', async () => {
    await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 9000 }), fc.nat(5000), fc.integer({ min: 1, max: 12000 }),
      async (content, extra, limit) => {
        const texts: Uint8Array[] = [];
        for (const sealed of [true, false]) {
          const fd = native.memfdCreate('iolab-test');
          try {
            native.ftruncate(fd, content.length + extra);
            if (content.length > 0) native.writev(fd, [content], 0);
            if (sealed) native.addSeals(fd, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
            const r = await readText(fd, plainIo, limit);
            expect(r.how).toBe(content.length + extra === 0 ? (sealed ? 'not read' : 'pread') : sealed ? 'mmap' : 'pread');
            texts.push(r.text);
          } finally {
            native.close(fd);
          }
        }
        const whole = new Uint8Array(content.length + extra);
        whole.set(content);
        const upTo = whole.subarray(0, limit);
        const nul = upTo.indexOf(0);
        const want = nul < 0 ? upTo : upTo.subarray(0, nul);
        expect(Buffer.from(texts[0])).toEqual(Buffer.from(want));
        expect(Buffer.from(texts[1])).toEqual(Buffer.from(want));
      }), { numRuns: 60 });
  });
});

describe('fdpass in process: every received fd is closed, nothing held', () => {
  it.each(['dgram', 'stream'] as const)('%s: a receiver and a sender in one process, round trip', async (type) => {
    const socket = join(tmp.path, `in-${type}.sock`);
    const events: ReceiverEvent[] = [];
    let sent: Promise<unknown> | undefined;
    await runReceiver({ socket, type, count: 2, timeout: 10_000, allowAnyUser: false }, (e) => {
      events.push(e);
      if (e.event === 'listening') {
        sent = (async () => {
          await runSender({ socket, type, message: 'one', size: 4096 });
          await runSender({ socket, type, message: 'two', size: 8192 });
        })();
      }
    });
    await sent;
    expect(events.map((e) => (e.event === 'message' ? [e.text, e.contents.text, e.fd.size] : e.event))).toEqual(
      ['listening', ['one', 'one', 4096], ['two', 'two', 8192]]);
    expect(readdirSync(tmp.path)).not.toContain(`in-${type}.sock.lock`);
    expect(readdirSync(tmp.path)).not.toContain(`in-${type}.sock`);
    expect(openFdCount()).toBe(fdsBefore);
    expect(await settledLiveObjects()).toEqual(zeroLiveObjects);
  });

  it('more fds than it takes: all closed, the receiver fails and removes its socket', async () => {
    const socket = join(tmp.path, 'in-many.sock');
    const received = runReceiver({ socket, type: 'dgram', count: 1, timeout: 10_000, allowAnyUser: false }, (e) => {
      if (e.event !== 'listening') return;
      const sock = native.socket('unix', 'dgram');
      const pair = native.socketpair('stream');
      try {
        native.connect(sock, socket);
        sendmsg(sock, [Buffer.from('x')], { fds: [...pair, ...pair], credentials: true });
      } finally {
        for (const fd of [sock, ...pair]) native.close(fd);
      }
    });
    await expect(received).rejects.toThrow('more file descriptors than the 1 this receiver takes');
    expect(readdirSync(tmp.path)).not.toContain('in-many.sock');
    expect(openFdCount()).toBe(fdsBefore);
  });
});
