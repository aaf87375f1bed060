// The package test's channel program, copied into the empty project that installed iolab and
// run there with `import ... from 'iolab'` (scripts/package-checks/channel.mjs). With no
// arguments it runs each case and prints one JSON line: { case: 'ok' | what went wrong }. It
// starts itself as the other side: a child (`echo`, `stream`, `slow`, with the socket as fd 3)
// or a worker thread (the socket's fd number in workerData).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, workerData } from 'node:worker_threads';
import { Channel, close, socketpair } from 'iolab';

const self = fileURLToPath(import.meta.url);

/** Message i: 1 to 3,000 bytes, byte k of it (i * 131 + k * 7) & 0xff. */
function message(i) {
  const m = Buffer.alloc(1 + ((i * 7919) % 3000));
  for (let k = 0; k < m.length; k++) m[k] = (i * 131 + k * 7) & 0xff;
  return m;
}

function differs(view, i) {
  const want = message(i);
  if (view.length !== want.length) return `message ${i} is ${view.length} bytes, not ${want.length}`;
  return Buffer.compare(view, want) === 0 ? undefined : `message ${i} has other bytes`;
}

/** The other side's loops. */
async function serve(socket, role) {
  const channel = await Channel.join(socket);
  close(socket);
  if (role === 'echo') {
    for await (const view of channel) await channel.send(view);
  } else if (role === 'stream') {
    for (let i = 0; ; i++) if (!channel.trySend(message(i))) await channel.send(message(i));
  } else if (role === 'slow') {
    const count = Buffer.alloc(4);
    let n = 0;
    for await (const view of channel) {
      void view;
      await new Promise((r) => setTimeout(r, 1));
      if (++n % 16 === 0) {
        count.writeUInt32LE(n, 0);
        await channel.send(count);
      }
    }
  }
  await channel.close();
}

/** This side's channel to a child running `role`. */
async function toChild(role, capacity) {
  const [mine, theirs] = socketpair('stream');
  const child = spawn(process.execPath, [self, role], { stdio: ['ignore', 'inherit', 'inherit', theirs] });
  const exited = once(child, 'exit');
  close(theirs);
  const channel = await Channel.create(mine, { capacity });
  close(mine);
  return { channel, child, exited };
}

/** Sends count messages while the echoes come back; each echo checked, in order. */
async function echo(channel, count) {
  const writer = (async () => {
    for (let i = 0; i < count; i++) if (!channel.trySend(message(i))) await channel.send(message(i));
  })();
  for (let i = 0; i < count; i++) {
    const wrong = differs(await channel.receive(), i);
    if (wrong) throw new Error(wrong);
  }
  await writer;
}

const cases = {
  async child() {
    const { channel, exited } = await toChild('echo', 1 << 20);
    await echo(channel, 2000);
    await channel.close();
    const [code] = await exited;
    if (code !== 0) throw new Error(`the child exited with ${code}`);
  },
  async worker() {
    const [mine, theirs] = socketpair('stream');
    const worker = new Worker(self, { workerData: { socket: theirs } });
    const exited = once(worker, 'exit');
    const channel = await Channel.create(mine, { capacity: 1 << 16 });
    close(mine);
    await echo(channel, 2000);
    await channel.close();
    const [code] = await exited;
    if (code !== 0) throw new Error(`the worker exited with ${code}`);
  },
  async orderingUnderLoad() {
    // both sides send at once through a ring a few messages long: 20,000 waits and wake-ups
    const { channel, exited } = await toChild('echo', 16384);
    await echo(channel, 20000);
    await channel.close();
    await exited;
  },
  async deadPeer() {
    const { channel, child, exited } = await toChild('stream', 32768);
    let i = 0;
    try {
      for (;;) {
        const view = await channel.receive();
        if (view === null) throw new Error('the stream ended without an error');
        const wrong = differs(view, i);
        if (wrong) throw new Error(wrong);
        if (++i === 2000) child.kill('SIGKILL');
      }
    } catch (err) {
      if (err.code !== 'ERR_CHANNEL_PEER_GONE') throw err;
    }
    await exited;
    if (!channel.closed) throw new Error('the channel is still open after the other side died');
  },
  async backpressure() {
    const { channel, child, exited } = await toChild('slow', 65536);
    const m = Buffer.alloc(4000, 7);
    const perRing = Math.floor(channel.capacity / (m.length + 8));
    let acked = 0;
    let waits = 0;
    let most = 0;
    channel.on('message', (view) => (acked = Buffer.from(view).readUInt32LE(0)));
    const rss = process.memoryUsage().rss;
    for (let sent = 0; sent < 1000; sent++) {
      if (!channel.trySend(m)) {
        waits++;
        await channel.send(m);
      }
      most = Math.max(most, sent + 1 - acked);
    }
    const grew = process.memoryUsage().rss - rss;
    await channel.close();
    child.kill('SIGKILL');
    await exited;
    if (waits < 50) throw new Error(`the writer waited ${waits} times only`);
    if (most > perRing + 17) throw new Error(`${most} messages were in flight; the ring holds ${perRing}`);
    if (grew > 32 << 20) throw new Error(`the writer's memory grew by ${grew} bytes`);
  },
};

if (!isMainThread) {
  await serve(workerData.socket, 'echo');
} else if (process.argv[2] !== undefined) {
  await serve(3, process.argv[2]);
} else {
  const results = {};
  for (const [name, run] of Object.entries(cases)) {
    let timer;
    const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timed out after 60 s')), 60_000)));
    try {
      await Promise.race([run(), timeout]);
      results[name] = 'ok';
    } catch (err) {
      results[name] = String(err?.message ?? err);
    } finally {
      clearTimeout(timer);
    }
  }
  console.log(JSON.stringify(results));
  process.exit(0); // a case that timed out may have left a wait behind
}
