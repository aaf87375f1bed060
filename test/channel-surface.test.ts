// The Channel's surface a program meets first: 'close' listeners (on and once), Symbol.asyncDispose
// (`await using`), and its options checked by type with the property named.
import { describe, expect, it } from 'vitest';
import { Channel, close, socketpair } from '../src/index.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

checkLeaksAfterAll(shortTempDir('iolab-channel-surface-'));

async function pair(): Promise<[Channel, Channel, () => void]> {
  const [a, b] = socketpair('stream');
  const [x, y] = await Promise.all([Channel.create(a, { capacity: 4096 }), Channel.join(b)]);
  return [x, y, () => { close(a); close(b); }];
}

describe('Channel: listeners, disposal, options', () => {
  it("'close' listeners (on, once) hear the close once; a removed one does not", async () => {
    const [x, y, done] = await pair();
    const heard: string[] = [];
    const removed = () => heard.push('removed');
    y.on('close', () => heard.push('on')).once('close', () => heard.push('once')).on('close', removed).off('close', removed);
    await y.close();
    await y.close();
    expect(heard).toEqual(['on', 'once']);
    expect(y.closed).toBe(true);
    await x.close();
    done();
  });

  it("a 'message' listener gets a message larger than the receive pool's first size (64 KiB) whole, and the small ones after it", async () => {
    const [a, b] = socketpair('stream');
    const [x, y] = await Promise.all([Channel.create(a, { capacity: 1 << 20 }), Channel.join(b)]);
    const big = Buffer.alloc(300 << 10);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7) & 0xff;
    const got: Buffer[] = [];
    const all = new Promise<void>((resolve) => y.on('message', (m) => { got.push(Buffer.from(m)); if (got.length === 3) resolve(); }));
    await x.send(Buffer.from('before'));
    await x.send(big);
    await x.send(Buffer.from('after'));
    await all;
    expect(got.map((m) => m.length)).toEqual([6, big.length, 5]);
    expect(got[1].equals(big)).toBe(true);
    expect(String(got[2])).toBe('after');
    await Promise.all([x.close(), y.close()]);
    close(a);
    close(b);
  });

  it('Symbol.asyncDispose closes it (what `await using` calls)', async () => {
    const [x, y, done] = await pair();
    const dispose = (x as unknown as Record<symbol, () => Promise<void>>)[Symbol.asyncDispose];
    expect(typeof dispose).toBe('function');
    await dispose.call(x);
    expect(x.closed).toBe(true);
    expect(() => x.trySend(Buffer.from('late'))).toThrow(expect.objectContaining({ code: 'ERR_CHANNEL_CLOSED' }));
    await y.close();
    done();
  });

  it('an option of the wrong type is refused, the property and the type named', async () => {
    const [a, b] = socketpair('stream');
    await expect(Channel.create(a, { zeroCopy: 'yes' as never })).rejects.toThrow(
      expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'The "options.zeroCopy" property must be of type boolean. Received type string' }));
    await expect(Channel.join(b, { zeroCopy: 1 as never })).rejects.toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', message: 'The "options.zeroCopy" property must be of type boolean. Received type number' }));
    close(a);
    close(b);
  });
});
