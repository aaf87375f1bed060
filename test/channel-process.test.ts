// The shared-memory channel between real processes: a Node child that echoes every message
// (ordering under load, every byte checked both ways), a slow reader (the writer waits, memory
// stays bounded), a child killed mid-stream (the survivor gets ERR_CHANNEL_PEER_GONE after what
// was sent before, whether it was receiving or waiting to send; nothing hangs), and a Python peer
// that knows only the documented layout.
import { describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Channel, close, socketpair } from '../src/index.js';
import { projectRoot } from '../src/native.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { buildSeccompRefuser, shortTempDir } from './support/temp.js';
import { newProcessTag, processTagVariable } from './support/procs.js';

const tmp = shortTempDir('iolab-channel-proc-');
checkLeaksAfterAll(tmp);

// The children use the package's compiled API (dist/, built by the global setup).
const index = pathToFileURL(join(projectRoot, 'dist', 'index.js')).href;
const nodePeer = join(projectRoot, 'test/fixtures/channel-peer.mjs');

/** A child with one end of a fresh socketpair as its fd 3, and this side's channel over the
 * other (created here; the child joins). */
async function withChild(argv: string[], capacity: number): Promise<{ child: ChildProcess; channel: Channel; exited: Promise<unknown[]> }> {
  const [mine, theirs] = socketpair('stream');
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit', theirs], env: { ...process.env, [processTagVariable]: newProcessTag() } });
  const exited = once(child, 'exit');
  close(theirs);
  try {
    return { child, channel: await Channel.create(mine, { capacity }), exited };
  } finally {
    close(mine);
  }
}

/** Message i of a test stream (the Node peer's 'stream' mode makes the same). */
function streamMessage(i: number): Buffer {
  const m = Buffer.alloc(1 + ((i * 7919) % 1000));
  for (let k = 0; k < m.length; k++) m[k] = (i * 131 + k * 7) & 0xff;
  return m;
}

describe('Channel between processes', () => {
  it('a Node child echoes 20,000 messages of random sizes through a 16 KiB ring while both sides send at once, every byte checked', async () => {
    const { channel, exited } = await withChild([process.execPath, nodePeer, index, 'echo'], 16384);
    const sizes = Array.from({ length: 20000 }, (_, i) => (i % 501 === 0 ? channel.maxMessageBytes : Math.floor(Math.random() * 2000)));
    const writer = (async () => {
      for (let i = 0; i < sizes.length; i++) {
        const m = Buffer.alloc(sizes[i]);
        for (let k = 0; k < m.length; k++) m[k] = (i + k) & 0xff;
        if (!channel.trySend(m)) await channel.send(m);
      }
    })();
    for (let i = 0; i < sizes.length; i++) {
      const back = (await channel.receive())!;
      expect(back.length).toBe(sizes[i]);
      for (let k = 0; k < back.length; k++) if (back[k] !== ((i + k) & 0xff)) expect.fail(`message ${i} differs at byte ${k}`);
    }
    await writer;
    await channel.close();
    expect((await exited)[0]).toBe(0); // the child's loop ended with our close, and it closed its side
  });

  it('round trips that each wake the other side: this side watches the child with one pidfd, however many wake-ups carry its pid', async () => {
    const pidfds = () => readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:[pidfd]';
      } catch {
        return false; // closed since the listing
      }
    }).length;
    const before = pidfds();
    const { channel, exited } = await withChild([process.execPath, nodePeer, index, 'echo'], 4096);
    for (let i = 0; i < 30; i++) {
      await new Promise((r) => setTimeout(r, 2)); // both asleep: the next message wakes the child, its echo this side
      await channel.send(Buffer.from(`ping ${i}`));
      expect(Buffer.from((await channel.receive())!).toString()).toBe(`ping ${i}`);
    }
    expect(pidfds() - before).toBe(1);
    await channel.close();
    expect((await exited)[0]).toBe(0);
    expect(pidfds()).toBe(before);
  });

  it('a slow reader: the writer waits for room and never has more than the ring in flight; its memory stays put', async () => {
    const { channel, child, exited } = await withChild([process.execPath, nodePeer, index, 'slow', '1'], 65536);
    const message = Buffer.alloc(4000, 7);
    const perRing = Math.floor(channel.capacity / (message.length + 8));
    let acked = 0;
    let waits = 0;
    let most = 0;
    channel.on('message', (view) => (acked = Buffer.from(view).readUInt32LE(0))); // the reader's counts
    const rssBefore = process.memoryUsage().rss;
    for (let sent = 0; sent < 2000; sent++) {
      if (!channel.trySend(message)) {
        waits++;
        await channel.send(message);
      }
      most = Math.max(most, sent + 1 - acked);
    }
    expect(waits).toBeGreaterThan(100);
    // in flight: what the queue holds, plus the reader's last 16 it has not counted back yet,
    // plus a count on its way: woken once half the queue is free, the writer fills it without
    // a turn of the loop, before the count the reader sent meanwhile reaches the listener (34
    // of 33 beside a second suite). A writer that kept waiting sends itself would reach 2,000
    expect(most).toBeLessThanOrEqual(perRing + 2 * 16 + 1);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(32 << 20);
    await channel.close();
    child.kill('SIGKILL');
    await exited;
  });

  it('a child killed mid-stream: what it sent before comes whole and in order, then ERR_CHANNEL_PEER_GONE; nothing hangs', async () => {
    const { channel, child, exited } = await withChild([process.execPath, nodePeer, index, 'stream'], 32768);
    let i = 0;
    const error = await (async () => {
      try {
        for (;;) {
          const view = await channel.receive();
          if (view === null) return new Error('the stream ended without an error');
          expect(Buffer.compare(view, streamMessage(i))).toBe(0);
          if (++i === 5000) child.kill('SIGKILL');
        }
      } catch (err) {
        return err as Error & { code?: string };
      }
    })();
    expect(error).toMatchObject({ code: 'ERR_CHANNEL_PEER_GONE' });
    expect(i).toBeGreaterThanOrEqual(5000);
    expect(channel.closed).toBe(true);
    await channel.close();
    await exited;
  });

  it('a child killed while this side waits to send (it never reads): the send fails with ERR_CHANNEL_PEER_GONE', async () => {
    const { channel, child, exited } = await withChild([process.execPath, nodePeer, index, 'hold'], 4096);
    await once(child.stdout!, 'data'); // joined
    while (channel.trySend(Buffer.alloc(1000)));
    const blocked = expect(channel.send(Buffer.alloc(1000))).rejects.toMatchObject({ code: 'ERR_CHANNEL_PEER_GONE' });
    const errors: Error[] = [];
    channel.on('error', (err) => errors.push(err));
    child.kill('SIGKILL');
    await blocked;
    expect(() => channel.trySend(Buffer.alloc(1))).toThrow(expect.objectContaining({ code: 'ERR_CHANNEL_PEER_GONE' }));
    await channel.close();
    await exited;
    expect(errors.map((e) => (e as Error & { code: string }).code)).toEqual(['ERR_CHANNEL_PEER_GONE']);
  });

  it("a child SIGKILLed while a copy of its end of the socket is left open here: ERR_CHANNEL_PEER_GONE all the same (its pidfd)", async () => {
    // The parent forgot close(theirs): the socket outlives the child, so its end never comes.
    // Each side learns the other's pid from the credentials of its first byte and polls a pidfd.
    for (const role of ['creates', 'joins']) {
      const [mine, theirs] = socketpair('stream');
      const child = spawn(process.execPath, [nodePeer, index, role === 'creates' ? 'hold' : 'create-hold'], { stdio: ['ignore', 'pipe', 'inherit', theirs], env: { ...process.env, [processTagVariable]: newProcessTag() } });
      const exited = once(child, 'exit');
      const said = once(child.stdout!, 'data');
      const channel = role === 'creates' ? await Channel.create(mine, { capacity: 4096 }) : await Channel.join(mine);
      close(mine);
      await said;
      const receiving = channel.receive().then(() => 'a message', (err) => err.code);
      await new Promise((r) => setTimeout(r, 200)); // the pids go both ways with the first bytes
      child.kill('SIGKILL');
      await exited;
      const late = new Promise((r) => setTimeout(r, 5000, `this side ${role}: still waiting 5 s after the child died`));
      expect(await Promise.race([receiving, late])).toBe('ERR_CHANNEL_PEER_GONE');
      await channel.close();
      close(theirs);
    }
  });

  it("a child that joined and was SIGKILLed before this side looked, a copy of its end of the socket left open here: the pid its byte names is gone already, and the receive ends at once", async () => {
    // This side never slept while the child lived: it reads the child's first byte (and so
    // its pid) only after the child was reaped, so there is no process to watch any more.
    const [mine, theirs] = socketpair('stream');
    const child = spawn(process.execPath, [nodePeer, index, 'hold'], { stdio: ['ignore', 'pipe', 'inherit', theirs], env: { ...process.env, [processTagVariable]: newProcessTag() } });
    const exited = once(child, 'exit');
    const said = once(child.stdout!, 'data');
    const channel = await Channel.create(mine, { capacity: 4096 });
    close(mine);
    await said;
    child.kill('SIGKILL');
    await exited;
    const receiving = channel.receive().then(() => 'a message', (err) => err.code);
    const late = new Promise((r) => setTimeout(r, 5000, 'still waiting 5 s after the child was reaped'));
    expect(await Promise.race([receiving, late])).toBe('ERR_CHANNEL_PEER_GONE');
    await channel.close();
    close(theirs);
  });

  it("a child that stops receiving with its channel open ends on its own: the watch on this side's process no longer holds it", async () => {
    const { child, channel, exited } = await withChild([process.execPath, nodePeer, index, 'receive', '3'], 4096);
    const said = once(child.stdout!, 'data');
    // the second's wake-up byte names this process: the child watches it while it waits for the third
    for (const message of ['first', 'second', 'third']) {
      await new Promise((r) => setTimeout(r, 200)); // the child asleep in receive()
      await channel.send(Buffer.from(message));
    }
    await said;
    const late = new Promise((r) => setTimeout(r, 15_000, 'still running 15 s after its last receive'));
    expect(await Promise.race([exited.then(([code]) => code), late])).toBe(0);
    await channel.close();
    child.kill('SIGKILL');
  });

  it('where pidfd_open is refused (a kernel before 5.3, a seccomp profile), a child joins and echoes all the same; the socket\'s end tells when it is gone', async () => {
    const refuser = buildSeccompRefuser(tmp.path);
    const { channel, exited } = await withChild([refuser, 'ENOSYS', '--pidfd-open', process.execPath, nodePeer, index, 'echo'], 4096);
    for (let i = 0; i < 200; i++) {
      await channel.send(streamMessage(i));
      expect(Buffer.compare((await channel.receive())!, streamMessage(i))).toBe(0);
    }
    await channel.close();
    expect((await exited)[0]).toBe(0);
  });

  it('a Python peer that knows only the documented layout reads every message and writes each back reversed', async () => {
    const count = 3000;
    const { channel, exited } = await withChild(['python3', join(projectRoot, 'test/fixtures/channel-peer.py'), String(count)], 8192);
    const writer = (async () => {
      for (let i = 0; i < count; i++) await channel.send(streamMessage(i));
    })();
    for (let i = 0; i < count; i++) {
      const back = (await channel.receive())!;
      expect(Buffer.compare(back, streamMessage(i).reverse())).toBe(0);
    }
    await writer;
    expect(await channel.receive()).toBeNull(); // it closed its side, as the layout says
    expect((await exited)[0]).toBe(0);
  });
});
