// Several Rings in one thread (a program's own, onRing's shared one, the channels' one). An op
// that completes inside the submit (a send the socket takes at once) is settled in its Ring's
// prepare callback, on the same loop turn; its continuation may queue an op on another Ring
// whose prepare callback ran already this turn (libuv runs the newest first). That op must reach
// the kernel before the loop waits in epoll: it once waited for the next timer, or for good.
// Each case runs in a child with nothing else on its loop but a stall timer, which fires only if
// the loop went to sleep with work queued (the work is 200 sends; the timer is the hang check).
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../src/native.js';

const iolab = pathToFileURL(join(projectRoot, 'dist', 'index.js')).href;

const program = `
const { Ring, Channel, socketpair, close } = await import(process.argv[1]);
const stall = setTimeout(() => { console.log('stalled'); process.exit(1); }, 5000);
const [x, y] = socketpair('stream');
if (process.argv[2] === 'two rings') {
  const first = new Ring(), second = new Ring();
  for (let i = 0; i < 100; i++) {
    await first.writev(x, [Buffer.from('a')]);
    await second.writev(x, [Buffer.from('b')]); // queued by JS run in first's prepare callback
  }
  await first.close();
  await second.close();
} else {
  // a Ring of the program's, then a channel (on the thread's channel Ring, made meanwhile)
  const mine = new Ring();
  await mine.writev(x, [Buffer.from('a')]);
  const [c, d] = socketpair('stream');
  const [created, joined] = await Promise.all([Channel.create(c), Channel.join(d)]);
  await created.send(Buffer.from('hello'));
  await joined.receive();
  await Promise.all([created.close(), joined.close()]);
  for (const fd of [c, d]) close(fd);
  await mine.close();
}
for (const fd of [x, y]) close(fd);
clearTimeout(stall);
console.log('done');
`;

describe('several Rings in one thread', () => {
  for (const name of ['two rings', 'a channel made by a continuation']) {
    it(`${name}: an op queued by a continuation another Ring ran reaches the kernel at once`, () => {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', program, iolab, name], { encoding: 'utf8', timeout: 60_000 });
      expect({ stdout: r.stdout.trim(), stderr: r.stderr, status: r.status }).toEqual({ stdout: 'done', stderr: '', status: 0 });
    });
  }
});
