// BufferRing.close() and `using`: a buffer ring unregistered and its memory freed while the
// Ring goes on; refused while a stream on it is not finished; its views read nothing after.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native, projectRoot } from '../src/native.js';
import { RingClosedError } from '../src/index.js';
import { ringTestSetup } from './support/ring.js';

const { newRing, track, dir } = ringTestSetup('iolab-ring-bufring-close-');

/** Data, then EOF, on a new stream of `pool`, closed after: the bytes it received. */
async function receive(ring: ReturnType<typeof newRing>, pool: ReturnType<ReturnType<typeof newRing>['setupBufRing']>, text: string): Promise<string> {
  const [a, b] = track(native.socketpair('stream'));
  let got = '';
  let stream: ReturnType<typeof ring.recvMultishot> | undefined;
  await new Promise<void>((resolve, reject) => {
    stream = ring.recvMultishot(b, pool, {
      data(id, length) {
        got += pool.bytes(id, length).toString();
        pool.release(id);
      },
      end: (err) => (err ? reject(err) : resolve()),
    });
    native.writev(a, [Buffer.from(text)]);
    native.shutdown(a, 'write');
  });
  await stream!.close(); // ended, and finished once closed: its buffer ring may go then
  return got;
}

describe('BufferRing.close()', () => {
  it('unregisters it and frees its memory; the Ring and its other buffer rings go on', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 4, size: 64 });
    const other = ring.setupBufRing({ count: 4, size: 64 });
    expect(await receive(ring, pool, 'first')).toBe('first');
    pool.close();
    pool.close(); // a second close does nothing
    expect(() => pool.view(0)).toThrow(expect.objectContaining({ code: 'ERR_RING_BUFFER_RING_CLOSED' }));
    expect(() => pool.release(0)).toThrow(expect.objectContaining({ code: 'ERR_RING_BUFFER_RING_CLOSED' }));
    const [, b] = track(native.socketpair('stream'));
    expect(() => ring.recvMultishot(b, pool, { data() {}, end() {} })).toThrow(expect.objectContaining({ code: 'ERR_RING_BUFFER_RING_CLOSED', message: 'buffer ring 0 is closed' }));
    expect(await receive(ring, other, 'second')).toBe('second');
    // once the Ring is closing, that comes first (as for every sync call of a closing Ring)
    const closing = ring.close();
    expect(() => ring.recvMultishot(b, pool, { data() {}, end() {} })).toThrow(RingClosedError);
    await closing;
  });

  it('is refused while a stream on it is not finished, and works once it is', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 4, size: 64 });
    const [, b] = track(native.socketpair('stream'));
    const stream = ring.recvMultishot(b, pool, { data() {}, end() {} });
    expect(() => pool.close()).toThrow(expect.objectContaining({ code: 'ERR_RING_BUFFER_RING_BUSY' }));
    await stream.close();
    pool.close();
    expect(() => pool.view(0)).toThrow(expect.objectContaining({ code: 'ERR_RING_BUFFER_RING_CLOSED' }));
  });

  it('a buffer JS held needs no release; its view reads nothing after', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 2, size: 16 });
    const [a, b] = track(native.socketpair('stream'));
    let held = -1;
    const stream = ring.recvMultishot(b, pool, { data(id) { held = id; }, end() {} });
    native.writev(a, [Buffer.from('kept')]);
    while (held < 0) await new Promise((r) => setTimeout(r, 1));
    const view = pool.view(held);
    expect(Buffer.from(view.subarray(0, 4)).toString()).toBe('kept');
    await stream.close();
    pool.close();
    expect(view.byteLength).toBe(0);
    expect(pool.held(held)).toBe(false);
  });

  it("closed by another stream's handler right after a release of its buffer there (the release waits for the dispatch's end): nothing is released into the closed pool, nothing throws", async () => {
    const ring = newRing();
    const other = ring.setupBufRing({ count: 2, size: 16 });
    const pool = ring.setupBufRing({ count: 2, size: 16 });
    // a buffer of `other` kept after its stream finished
    const [c, d] = track(native.socketpair('stream'));
    let kept = -1;
    const done = ring.recvMultishot(d, other, { data(id) { kept = id; }, end() {} });
    native.writev(c, [Buffer.from('kept')]);
    while (kept < 0) await new Promise((r) => setTimeout(r, 1));
    await done.close();
    const [a, b] = track(native.socketpair('stream'));
    const errors: unknown[] = [];
    let handled = false;
    const stream = ring.recvMultishot(b, pool, {
      data(id) {
        try {
          other.release(kept); // in a dispatch: given back once it ends
          other.close(); // before it ends
          pool.release(id);
        } catch (err) {
          errors.push(err);
        }
        handled = true;
      },
      end() {},
    });
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      native.writev(a, [Buffer.from('go')]);
      while (!handled) await new Promise((r) => setTimeout(r, 1));
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect({ errors, uncaught }).toEqual({ errors: [], uncaught: [] });
    expect(other.held(kept)).toBe(false);
    expect(await receive(ring, pool, 'the pool goes on')).toBe('the pool goes on');
    await stream.close();
  });

  it('Symbol.dispose closes it; `using` does on Node 24', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 2, size: 16 });
    expect(typeof pool[Symbol.dispose]).toBe('function');
    pool[Symbol.dispose]();
    expect(() => pool.view(0)).toThrow(expect.objectContaining({ code: 'ERR_RING_BUFFER_RING_CLOSED' }));
    const script = join(dir().path, 'using.mjs');
    writeFileSync(script, `import { Ring } from ${JSON.stringify(join(projectRoot, 'src/index.ts'))};
const ring = new Ring();
let kept;
{
  using pool = ring.setupBufRing({ count: 2, size: 16 });
  kept = pool;
  kept.view; // open until the block ends
}
let code;
try { kept.view(0); } catch (err) { code = err.code; }
if (code !== 'ERR_RING_BUFFER_RING_CLOSED') throw new Error('using did not close it: ' + code);
await ring.close();
console.log('ok');
`);
    const node = join(execFileSync(process.execPath, [join(projectRoot, 'scripts', 'node-lines.mjs'), '24'], { encoding: 'utf8' }).trim(), 'node');
    const out = execFileSync(node, ['--import', 'tsx', script], { cwd: projectRoot, encoding: 'utf8' });
    expect(out.trim()).toBe('ok');
  });

  it('after the Ring closed, close() does nothing (the Ring freed it)', async () => {
    const ring = newRing();
    const pool = ring.setupBufRing({ count: 2, size: 16 });
    await ring.close();
    expect(() => pool.close()).not.toThrow();
  });
});
