// onRing in worker_threads with one listening socket shared between threads (docs/api.md, "More
// than one process"): a Ring is per thread, so each thread's server accepts with its own Ring on
// its own fd of the one socket (a copy made with SCM_RIGHTS, as close() closes the fd its
// server was given); the kernel gives each connection to one thread, and a thread that closes
// its server leaves the socket to the others. Plain node:http does the same steps beside it.
// The main thread has the addon loaded too (a worker ending with a Ring open while the main
// thread has not loaded it crashed the process: fixed in native/ring/core_close.cc).
import { afterAll, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { bind, close, getsockname, listen, recvmsg, sendmsg, socket, socketpair } from '../src/index.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { fixture, indexUrl, spread } from './support/http-servers.js';

const tmp = shortTempDir('iolab-ring-threads-');
checkLeaksAfterAll(tmp);
const workers: Worker[] = [];
afterAll(async () => {
  await Promise.all(workers.map((w) => w.terminate()));
});

/** A copy of fd under a number of its own (SCM_RIGHTS over a socketpair). */
function copyOf(fd: number): number {
  const [a, b] = socketpair('stream');
  try {
    sendmsg(a, [Buffer.from('x')], { fds: [fd] });
    return recvmsg(b, [Buffer.alloc(1)], { maxFds: 1 }).fds[0];
  } finally {
    close(a);
    close(b);
  }
}

function nextMessage(worker: Worker): Promise<string> {
  return new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

describe.each(['ring', 'node'])('worker_threads, %s', (kind) => {
  it('two threads serve one listening socket, each on its own fd of it: both answer; one closing leaves the socket to the other', async () => {
    const listening = socket('inet', 'stream');
    bind(listening, { host: '127.0.0.1', port: 0 });
    listen(listening);
    const { port } = getsockname(listening) as { port: number };
    const threads = [0, 1].map(() => {
      const worker = new Worker(fixture('http-thread.mjs'), { workerData: { indexUrl, kind, fd: copyOf(listening) } });
      workers.push(worker);
      return worker;
    });
    const exited = threads.map((w) => once(w, 'exit'));
    close(listening); // the threads' copies keep the socket
    expect(await Promise.all(threads.map(nextMessage))).toEqual(['listening', 'listening']);
    const { byBody, errors } = await spread(port, 100, 10);
    console.log(`worker_threads ${kind}: answers per thread ${JSON.stringify(byBody)}`);
    expect(errors).toEqual([]);
    expect(Object.keys(byBody).sort()).toEqual(threads.map((w) => `thread ${w.threadId}`).sort());
    threads[0].postMessage('close');
    expect(await nextMessage(threads[0])).toBe('closed');
    expect(await spread(port, 20, 10)).toEqual({ byBody: { [`thread ${threads[1].threadId}`]: 20 }, errors: [] });
    threads[1].postMessage('close');
    expect(await nextMessage(threads[1])).toBe('closed');
    expect(await Promise.all(exited)).toEqual([[0], [0]]);
  });
});
