// A Channel between threads: a worker joins over an fd number and echoes messages back, and a
// worker terminated mid-stream (the other side gets ERR_CHANNEL_PEER_GONE). The same process's
// channels are test/channel.test.ts's; other processes', test/channel-process.test.ts's.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Channel, close, socketpair } from '../src/index.js';
import { projectRoot } from '../src/native.js';
import { message } from './support/channel-region.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-channel-worker-');
checkLeaksAfterAll(tmp);

describe('Channel with a worker thread', () => {
  // The worker uses the package's compiled API (dist/, built by the global setup).
  const index = pathToFileURL(join(projectRoot, 'dist', 'index.js')).href;

  function startWorker(body: string, socket: number): Worker & { exited: Promise<number> } {
    const worker = new Worker(`
      const { workerData, parentPort } = require('node:worker_threads');
      import(${JSON.stringify(index)}).then(async ({ Channel, close }) => { ${body} })
        .catch((e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
    `, { eval: true, workerData: { socket } });
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    return Object.assign(worker, { exited });
  }

  it('a worker joins over an fd number and echoes 2,000 messages back, each byte checked on both sides', async () => {
    const [a, b] = socketpair('stream');
    const worker = startWorker(`
      const channel = await Channel.join(workerData.socket);
      close(workerData.socket); // the worker's now: the channel keeps its own copy
      let n = 0;
      for await (const view of channel) {
        for (let k = 0; k < view.length; k++) if (view[k] !== ((n * 131 + k * 7) & 0xff)) throw new Error('byte ' + k + ' of message ' + n);
        await channel.send(view); // copied into the other ring before the next receive
        n++;
      }
      parentPort.postMessage({ received: n });
    `, b);
    const x = await Channel.create(a, { capacity: 16384 });
    close(a);
    const sizes = Array.from({ length: 2000 }, (_, i) => (i * 37) % 3000);
    const writer = (async () => {
      for (let i = 0; i < sizes.length; i++) await x.send(message(i, sizes[i]));
    })();
    for (let i = 0; i < sizes.length; i++) {
      const back = (await x.receive())!;
      expect(Buffer.compare(back, message(i, sizes[i]))).toBe(0);
    }
    await writer;
    const reply = new Promise((resolve) => worker.once('message', resolve));
    await x.close();
    expect(await reply).toEqual({ received: sizes.length });
    expect(await worker.exited).toBe(0);
  });

  it('a worker that is terminated mid-stream: the other side gets ERR_CHANNEL_PEER_GONE, nothing hangs', async () => {
    const [a, b] = socketpair('stream');
    const worker = startWorker(`
      const channel = await Channel.join(workerData.socket);
      close(workerData.socket);
      parentPort.postMessage({ joined: true });
      await new Promise(() => {}); // never reads
    `, b);
    const x = await Channel.create(a, { capacity: 4096 });
    close(a);
    await new Promise((resolve) => worker.once('message', resolve));
    x.trySend(Buffer.alloc(x.maxMessageBytes));
    x.trySend(Buffer.alloc(x.maxMessageBytes));
    const blocked = expect(x.send(Buffer.alloc(x.maxMessageBytes))).rejects.toMatchObject({ code: 'ERR_CHANNEL_PEER_GONE' });
    const receiving = expect(x.receive()).rejects.toMatchObject({ code: 'ERR_CHANNEL_PEER_GONE', message: expect.stringMatching(/ended without closing it/) });
    await worker.terminate();
    await blocked;
    await receiving;
    expect(x.closed).toBe(true);
    await x.close();
  });
});
