// Setting a channel up when the other side does not come: join's and create's `signal` and
// `timeout` (the Ring's conventions: an AbortError with the signal's reason, ETIMEDOUT), and a
// creator whose process ends before its hello while a copy of its end of the socket is left open
// (so the socket never ends): the joiner watches the process SO_PEERCRED names and fails with
// ERR_CHANNEL_PEER_GONE. Nothing is left behind on any of these paths: the socket can carry a
// channel afterwards, and the file's leak check counts fds and live objects.
import { describe, expect, it, onTestFinished } from 'vitest';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Channel, close, liveObjects, recvmsg, sendmsg, setNonBlocking, socketpair } from '../src/index.js';
import { native, projectRoot } from '../src/native.js';
import { checkLeaksAfterAll, settledLiveObjects } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';
import { craftedRegion } from './support/channel-region.js';
import { newProcessTag, processTagVariable } from './support/procs.js';

const tmp = shortTempDir('iolab-channel-setup-');
checkLeaksAfterAll(tmp);

const index = pathToFileURL(join(projectRoot, 'dist', 'index.js')).href;

/** Both sides over a, b, to show the socket carries a channel after a setup that failed. */
async function pairOver(a: number, b: number): Promise<void> {
  const [x, y] = await Promise.all([Channel.create(a, { capacity: 4096 }), Channel.join(b)]);
  x.trySend(Buffer.from('after'));
  expect(Buffer.from((await y.receive())!).toString()).toBe('after');
  await Promise.all([x.close(), y.close()]);
}

describe('Channel setup: signal and timeout', () => {
  it('join: an abort while it waits for the hello rejects with an AbortError (the reason as cause); the socket is free again', async () => {
    const [a, b] = socketpair('stream');
    const before = liveObjects();
    const controller = new AbortController();
    const joining = Channel.join(b, { signal: controller.signal });
    await new Promise((r) => setImmediate(r));
    const reason = new Error('no longer wanted');
    controller.abort(reason);
    await expect(joining).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: reason });
    expect(await settledLiveObjects()).toEqual(before);
    await pairOver(a, b);
    close(a);
    close(b);
  });

  it('join and create: a signal aborted already rejects at once, nothing claimed', async () => {
    const [a, b] = socketpair('stream');
    const signal = AbortSignal.abort('early');
    await expect(Channel.join(b, { signal })).rejects.toMatchObject({ name: 'AbortError', cause: 'early' });
    await expect(Channel.create(a, { signal })).rejects.toMatchObject({ name: 'AbortError', cause: 'early' });
    await pairOver(a, b);
    close(a);
    close(b);
  });

  it('join: a timeout that passes before the hello rejects with ETIMEDOUT', async () => {
    const [a, b] = socketpair('stream');
    await expect(Channel.join(b, { timeout: 20 })).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    await pairOver(a, b);
    close(a);
    close(b);
  });

  it("join: a hello in two pieces 100 ms apart waits for the rest within what is left of its timeout", async () => {
    const [a, b] = socketpair('stream');
    const region = craftedRegion(4096);
    try {
      sendmsg(a, [Buffer.from('iolab')]);
      const joining = Channel.join(b, { timeout: 10_000 });
      await new Promise((r) => setTimeout(r, 100));
      sendmsg(a, [Buffer.from('ch1')], { fds: [region.memfd] });
      const channel = await joining;
      expect(channel.maxMessageBytes).toBeGreaterThan(0);
      await channel.close();
    } finally {
      native.munmap(region.mapping);
      close(region.memfd);
      close(a);
      close(b);
    }
  });

  it('join: a hello that carries two fds, in one piece or in two, fails with ERR_CHANNEL_PROTOCOL; neither fd is kept', async () => {
    for (const pieces of [1, 2]) {
      const [a, b] = socketpair('stream');
      const region = craftedRegion(4096);
      try {
        if (pieces === 1) sendmsg(a, [Buffer.from('iolabch1')], { fds: [region.memfd, region.memfd] });
        else {
          sendmsg(a, [Buffer.from('iolab')], { fds: [region.memfd] });
          sendmsg(a, [Buffer.from('ch1')], { fds: [region.memfd] });
        }
        await expect(Channel.join(b, { timeout: 10_000 })).rejects.toMatchObject({ code: 'ERR_CHANNEL_PROTOCOL', message: expect.stringMatching(/more fds than a channel does/) });
      } finally {
        native.munmap(region.mapping);
        close(region.memfd);
        close(a);
        close(b);
      }
    }
  });

  it('create: a socket too full for the hello waits, and its timeout or signal ends the wait; nothing is left behind', async () => {
    const [a, b] = socketpair('stream', { nonBlocking: true });
    let filled = 0;
    try {
      for (;;) filled += sendmsg(a, [Buffer.alloc(65536)]);
    } catch (err) {
      expect(err).toMatchObject({ code: 'EAGAIN' });
    }
    setNonBlocking(a, false); // the Ring's send waits for room, as on any blocking socket
    const before = liveObjects();
    await expect(Channel.create(a, { timeout: 20 })).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    const controller = new AbortController();
    const creating = Channel.create(a, { signal: controller.signal });
    await new Promise((r) => setImmediate(r));
    controller.abort();
    await expect(creating).rejects.toMatchObject({ name: 'AbortError' });
    expect(await settledLiveObjects()).toEqual(before);
    // the filler read, the socket carries a channel
    setNonBlocking(b, true);
    const sink = Buffer.alloc(65536);
    for (let read = 0; read < filled;) read += recvmsg(b, [sink]).bytesRead;
    setNonBlocking(b, false);
    await pairOver(a, b);
    close(a);
    close(b);
  });

  it("refuses a signal that is no AbortSignal and a timeout out of range, as the Ring's methods do", async () => {
    const [a, b] = socketpair('stream');
    await expect(Channel.join(b, { signal: 'stop' as never })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringMatching(/options\.signal/) });
    await expect(Channel.create(a, { timeout: 0 })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE', message: expect.stringMatching(/options\.timeout/) });
    await expect(Channel.join(b, { timeout: '1' as never })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' });
    await pairOver(a, b);
    close(a);
    close(b);
  });
});

describe('Channel setup: a creator that ends before its hello', () => {
  /** A child that makes a socketpair and passes this process both ends (the joiner's, and a
   * copy of the creator's, as a stray copy would stay open), then waits to be killed: the
   * joiner's end names the child as the process at its other end (SO_PEERCRED). */
  async function strayCreator(): Promise<{ joinerEnd: number; strayCopy: number; kill(): Promise<void> }> {
    const [mine, theirs] = socketpair('stream');
    const child = spawn(process.execPath, ['--input-type=module', '-e', `
      const { socketpair, sendmsg } = await import(${JSON.stringify(index)});
      const [creatorEnd, joinerEnd] = socketpair('stream');
      sendmsg(3, [Buffer.from('x')], { fds: [joinerEnd, creatorEnd] });
      setInterval(() => {}, 1000); // never creates
    `], { stdio: ['ignore', 'ignore', 'inherit', theirs], env: { ...process.env, [processTagVariable]: newProcessTag() } });
    const exited = once(child, 'exit');
    onTestFinished(() => void child.kill('SIGKILL')); // also when the test fails or times out
    close(theirs);
    try {
      const got = recvmsg(mine, [Buffer.alloc(1)], { maxFds: 2 });
      expect(got.fds).toHaveLength(2);
      return {
        joinerEnd: got.fds[0], strayCopy: got.fds[1],
        async kill() {
          child.kill('SIGKILL');
          await exited;
        },
      };
    } finally {
      close(mine);
    }
  }

  it('join fails with ERR_CHANNEL_PEER_GONE when the creator dies while it waits, and at once when it died before', async () => {
    const { joinerEnd, strayCopy, kill } = await strayCreator();
    try {
      // an abort while the creator's pidfd is watched: the watch ends with it
      const controller = new AbortController();
      const aborted = Channel.join(joinerEnd, { signal: controller.signal });
      await new Promise((r) => setImmediate(r));
      controller.abort();
      await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
      const joining = Channel.join(joinerEnd).then(() => 'joined', (err) => err);
      await new Promise((r) => setImmediate(r));
      await kill();
      // the stray copy keeps the socket open: only the pidfd can tell (before it, join never settled)
      const late = new Promise((r) => setTimeout(r, 5000, 'still waiting 5 s after the creator died'));
      expect(await Promise.race([joining, late])).toMatchObject({ code: 'ERR_CHANNEL_PEER_GONE', message: expect.stringMatching(/ended before the channel was set up/) });
      await expect(Channel.join(joinerEnd)).rejects.toMatchObject({ code: 'ERR_CHANNEL_PEER_GONE' });
    } finally {
      close(joinerEnd);
      close(strayCopy);
    }
  });
});
