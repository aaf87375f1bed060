// A worker thread that ends with a Ring open, in a process whose main thread never loaded iolab:
// the worker's env teardown is the addon's last user, so Node unloads it right after. The Ring's
// handles must be closed by then (a close callback left for later ran in unmapped code: SIGSEGV).
// Each case runs in a fresh process, as the crash needs the main thread to have no iolab.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../src/native.js';

const iolab = pathToFileURL(join(projectRoot, 'dist', 'index.js')).href;

// The worker: a Ring with a finished op, an onRing server listening (unref'd when the worker is
// to end by itself), and a Channel with both ends in the worker (its Ring is the thread's
// shared one). Then it ends as `how` says.
const worker = `
import { parentPort, workerData } from 'node:worker_threads';
import http from 'node:http';
const { Ring, onRing, Channel, socketpair, close } = await import(workerData.iolab);
const how = workerData.how;
const ring = new Ring();
const [a, b] = socketpair('stream');
await ring.writev(a, [Buffer.from('x')]);
const server = onRing(http.createServer((req, res) => res.end('ok')));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const [c, d] = socketpair('stream');
const [created, joined] = await Promise.all([Channel.create(c), Channel.join(d)]);
await created.send(Buffer.from('hello'));
await joined.receive();
for (const fd of [a, b, c, d]) close(fd);
if (how === 'by itself') {
  server.unref();
  created.unref?.();
  joined.unref?.();
  // nothing else keeps the loop alive: the worker ends with the Rings and the Channel open
} else if (how === 'process.exit') {
  process.exit(0);
} else {
  parentPort.postMessage('ready');
  setInterval(() => {}, 1000); // kept alive until terminate()
}
`;

const main = `
import { Worker } from 'node:worker_threads';
const [iolab, how] = process.argv.slice(1); // node -e: no script in argv
const w = new Worker(${JSON.stringify(worker)}, { eval: true, type: 'module', workerData: { iolab, how } });
w.on('message', () => w.terminate());
w.on('error', (err) => { console.error('worker error', err); process.exitCode = 2; });
w.on('exit', (code) => console.log('worker exit', code));
`;

describe('a worker thread that ends with a Ring open, iolab loaded in no other thread', () => {
  for (const how of ['by itself', 'process.exit', 'terminate']) {
    it(`ends ${how === 'by itself' ? how : `by ${how}()`}, and the process exits cleanly`, () => {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', main, iolab, how], { encoding: 'utf8', timeout: 60_000 });
      expect({ signal: r.signal, status: r.status, stderr: r.stderr }).toEqual({ signal: null, status: 0, stderr: '' });
      expect(r.stdout).toMatch(/^worker exit [01]$/m);
    });
  }
});
