// The end of each sequence of the Ring's model-based test. While the Ring is open: everything
// JS holds goes back, the peers read what was sent and feed what waits, and every stream must
// catch up (a stream that never gets the bytes waiting for it, with buffers free, is stuck);
// each pool must still have all its buffers; then ring.close(). Either way: every Promise has
// settled, every stream not closed got `end`, and what is left in each fd is exactly the bytes
// no reader took; the file is what the model says.
import fs from 'node:fs';
import { readvSync, setNonBlocking } from '../../../src/index.js';
import { releaseHeld } from './held.js';
import { openStream } from './streams.js';
import { coverage, type Duct, type World } from './world.js';

export const turn = () => new Promise<void>((r) => setImmediate(r));

/** Turns of the loop until `done` (true) or `ms` pass (false); with `moved`, `ms` with nothing
 * moved: a run with much to move on a loaded machine is slow, not stuck. */
async function until(done: () => boolean, ms: number, moved?: () => string): Promise<boolean> {
  let deadline = Date.now() + ms;
  let last = moved?.();
  while (!done()) {
    const now = moved?.();
    if (now !== last) {
      last = now;
      deadline = Date.now() + ms;
    }
    if (Date.now() > deadline) return false;
    await turn();
  }
  return true;
}

/** What has moved so far: the bytes readers and peers took, and the ops still waiting. */
function moved(world: World): string {
  let bytes = 0;
  for (const d of [...world.readable, ...world.writable]) {
    for (const c of [d.inbound, d.outbound]) if (c !== undefined) bytes += c.length - c.unread;
  }
  return `${bytes}/${world.pending.size}`;
}

function releaseAll(world: World): void {
  for (const h of [...world.held]) releaseHeld(world, h, 'the end');
}

/** What is waiting for whom, for a stuck run's message. */
function waiting(world: World): string {
  const streams = world.streams.filter((s) => !s.finished).map((s) =>
    `${s.name}: closeCalled ${s.closeCalled}, ended ${s.ended}, peer closed ${s.duct.peerClosed}, unread ${s.duct.inbound!.unread}, queued ${s.closeCalled || world.closing !== undefined ? '-' : s.stream.queuedBytes}`);
  return [...[...world.pending].map((p) => p.label), ...streams].join('; ');
}

/** Feeds and drains the peers until nothing waits: every op settled, every open stream has
 * every byte its peer wrote and nothing left to send. */
async function quiesce(world: World, ms: number): Promise<void> {
  world.quiescing = true;
  for (const s of world.streams) s.pauseByUser(false); // a paused stream catches up only once resumed
  // (a stream whose peer closed is caught up once it got `end`: EOF after the peer's last byte,
  // or the error of a send the peer did not take)
  const caughtUp = () => world.streams.every((s) => s.closeCalled || s.ended ||
    (!s.duct.peerClosed && s.duct.inbound!.unread === 0 && s.stream.queuedBytes === 0));
  // A stream closed with chunks in flight drops them: when they were the socket's last bytes,
  // the next reader has nothing to read and the model cannot know they went. Bytes written
  // after them (once per gap) show where the next reader is: past them, or still before.
  const fedAt = new Map<Duct, number>();
  const settled = await until(() => {
    releaseAll(world);
    for (const d of world.writable) world.peerDrain(d);
    world.peerReceiveMessages();
    // an op waits for bytes (a batch may want more than its peer wrote): feed it
    for (const d of world.readable) {
      if (d.reader === undefined || d.reader === d.abortedReader) continue;
      if (!d.reader.startsWith('stream')) world.peerWrite(d, 16);
      else if (d.inbound!.gapOpen && d.inbound!.unread > 0 && fedAt.get(d) !== d.inbound!.length) {
        world.peerWrite(d, 16);
        fedAt.set(d, d.inbound!.length);
      }
    }
    if (world.seq.reader !== undefined) world.peerSendMessage(8, 0);
    return world.pending.size === 0 && caughtUp();
  }, ms, () => moved(world));
  if (!settled) world.fail(`stuck: nothing moved for ${ms} ms with the Ring open: ${waiting(world)}`);
}

/** Every pool still has all its buffers: a stream that holds each chunk gets `count` of them. */
async function poolsWhole(world: World, ms: number): Promise<void> {
  for (let p = 0; p < world.pools.length; p++) {
    if (world.poolClosed[p]) continue;
    const duct = world.sockets.find((d) => d.reader === undefined && d.writer === undefined && !d.peerClosed);
    if (duct === undefined || world.closing !== undefined) return;
    const s = openStream(world, duct, p, { reactions: ['hold'], onEnd: 'none' }, 'the end, to count the buffers');
    if (s === undefined) return;
    world.quiescing = false;
    const { count, size } = world.pools[p];
    world.peerWrite(duct, count * size + 64);
    // the chunks come within a few turns; a pool short of buffers never gets there
    const whole = await until(() => world.held.filter((h) => h.pool === p).length === count, ms);
    if (!whole) world.fail(`pool ${p} gave out ${world.held.filter((h) => h.pool === p).length} of its ${count} buffers: some were lost`);
    world.quiescing = true;
    s.close('the end');
    releaseAll(world);
    await until(() => s.finished, ms);
  }
}

/** Reads what is left in each fd without the Ring: the bytes no reader took, in order. */
function drainLeft(world: World): void {
  const buf = Buffer.alloc(65536);
  for (const d of world.readable) {
    setNonBlocking(d.ringFd, true);
    for (;;) {
      let n = 0;
      try {
        n = readvSync(d.ringFd, [buf]);
      } catch (e) {
        if ((e as { code?: string }).code !== 'EAGAIN') throw e;
      }
      if (n === 0) break;
      const wrong = d.inbound!.deliver(buf.subarray(0, n), 'what was left');
      if (wrong !== undefined) world.fail(wrong);
    }
    const lost = d.inbound!.complete();
    if (lost !== undefined) world.fail(lost);
  }
  for (const d of world.writable) {
    world.peerDrain(d);
    const lost = d.outbound!.complete();
    if (lost !== undefined) world.fail(lost);
  }
  world.peerReceiveMessages();
  for (const m of world.seq.toPeer) world.fail(`a message of ${m.bytes.length} bytes the Ring sent never reached the peer`);
}

export async function finish(world: World, ms: number): Promise<void> {
  if (world.closing !== undefined) {
    coverage.ringClosedMidway++;
  } else if (world.spec.end === 'settled') {
    await quiesce(world, ms);
    for (const s of world.streams) s.close('the end');
    releaseAll(world);
    await until(() => world.pending.size === 0, ms);
    await poolsWhole(world, ms);
  }
  world.closeRing('the end');
  if (!(await until(() => world.pending.size === 0, ms))) world.fail(`never settled after ring.close(): ${waiting(world)}`);
  const stats = world.ring.stats as unknown as Record<string, number | undefined>;
  coverage.recvNoBuffers += stats.recvNoBuffers ?? 0;
  coverage.streamSlotsReused += stats.streamSlotsReused ?? 0;
  coverage.streamSendsCopied += stats.streamSendsCopied ?? 0;
  coverage.cqOverflows += stats.cqOverflows ?? 0;
  for (const s of world.streams) if (!s.closeCalled && !s.ended) world.fail(`${s.name}: no end after ring.close()`);
  drainLeft(world);
  if (!fs.readFileSync(world.filePath).equals(world.file.content)) world.fail('the file is not what the model wrote');
}
