// The commands of the Ring's model-based test (fast-check `fc.commands`): what a peer does
// (write, read, send messages, go away), the Ring's ops with plain or re-entering arguments,
// streams with scripted handlers, buffers given back from outside, cancelFd, ring.close(). Each
// takes effect, lets the loop turn once, then checks the invariants (checkStep).
import fc from 'fast-check';
import fs from 'node:fs';
import { RingClosedError } from '../../../src/index.js';
import type { Adversary, AdversaryAction, Memory } from './getters.js';
import { checkHeld, closePool, releaseHeld, releaseNotHeld, sendHeld, writeCopy } from './held.js';
import { abortOps, readDuct, readFile, readvBatch, type BatchSpec, type PositionSpec, type ReadSpec } from './ops.js';
import { cancelFd, recvmsgBatchAborted, recvmsgSeq, sendmsgSeq, writeDuct, writeFile, type WriteSpec } from './ops-write.js';
import { openStream, type EndReaction, type Reaction, type StreamScript } from './streams.js';
import { taggedBytes } from './channel.js';
import { turn } from './finish.js';
import { latestGen } from './version.js';
import { coverage, type World } from './world.js';

export interface Model {
  world: World;
}
type Cmd = fc.AsyncCommand<Model, World>;
const trace = process.env.IOLAB_FUZZ_TRACE === '1';

/** After each command: the pools agree with the model, nothing went wrong so far. */
async function checkStep(world: World, what: string): Promise<void> {
  coverage.commands++;
  await turn();
  checkHeld(world, `after ${what}`);
  // a pool all of whose buffers JS holds while a peer's bytes wait for a stream of it: the
  // kernel finds no buffer (ENOBUFS) and the stream must wait, then go on in order
  world.pools.forEach((pool, p) => {
    const held = world.held.filter((h) => h.pool === p).length;
    const starved = world.streams.some((s) => !s.closeCalled && !s.ended && s.duct.inbound!.unread > 0 && s.pool === p);
    if (held === pool.count && starved) coverage.poolHeldWhilePeerSends++;
  });
  // a stream whose peer does not read what it sends: paused, until the peer reads
  // (queuedBytes throws RingClosedError once the Ring is closing)
  if (world.closing === undefined && world.streams.some((s) => !s.closeCalled && !s.finished && s.stream.queuedBytes > s.pauseAt)) coverage.pausedStreams++;
  if (world.streams.some((s) => s.userPaused && !s.closeCalled && s.duct.inbound!.unread > 0)) coverage.userPausedWithBytesWaiting++;
  world.throwIfFailed();
}

/** A command: `act` runs it while the Ring is open (or, with `whenClosed`, also after). */
function command(describe: string, act: (world: World) => void, whenClosed = false): Cmd {
  return {
    check: (m) => whenClosed || m.world.closing === undefined,
    async run(_m, world) {
      // (a replay prints each command first: a crash then shows what it was doing)
      if (trace) fs.writeSync(1, `${JSON.stringify({ command: describe })}\n`);
      act(world);
      await checkStep(world, describe);
    },
    toString: () => describe,
  };
}

const small = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 16 }), fc.integer({ min: 17, max: 300 }));
const sizes = fc.array(small, { minLength: 1, maxLength: 3 });
// (0 more often: on a socket or pipe the kernel takes 0 as no position and refuses the others)
const offset = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12_100 }));
const position: fc.Arbitrary<PositionSpec> = fc.oneof(fc.constantFrom<PositionSpec>('omitted', 'null', 'minus1'), offset);
const memory = fc.constantFrom<Memory>('heap', 'heap', 'shared', 'resizable', 'mapped', 'readOnlyMapped');
const action = fc.constantFrom<AdversaryAction>('closeRing', 'closeStream', 'openStream', 'startRecv', 'detachOther', 'shrinkOther', 'detachOwn', 'shrinkOwn', 'callAgain');
const adversary: fc.Arbitrary<Adversary | undefined> = fc.option(
  fc.record({ where: fc.constantFrom<Adversary['where']>('element', 'option', 'then'), action }), { freq: 2, nil: undefined });
const reaction = fc.constantFrom<Reaction>(
  'release', 'release', 'hold', 'hold', 'echo', 'echo', 'copy', 'closeSelf', 'closeSelfOpenOther', 'closeSelfOpenOther',
  'openOther', 'closeRing', 'startRecv', 'releaseTwice', 'throw', 'sendViaOther');
const script: fc.Arbitrary<StreamScript> = fc.record({
  reactions: fc.array(reaction, { minLength: 1, maxLength: 4 }),
  onEnd: fc.constantFrom<EndReaction>('closeSelf', 'closeSelf', 'none', 'closeRing', 'openOther', 'throw'),
  pauseAt: fc.option(fc.integer({ min: 1, max: 512 }), { nil: undefined }),
});
const readSpec: fc.Arbitrary<ReadSpec> = fc.record({
  call: fc.constantFrom<ReadSpec['call']>('read', 'readv', 'recv', 'recvmsg'), sizes, position, memory, adversary,
});
const batchSpec: fc.Arbitrary<BatchSpec> = fc.record({
  requests: fc.array(fc.record({ sizes, position }), { minLength: 1, maxLength: 4 }), memory, adversary,
});
const writeSpec: fc.Arbitrary<WriteSpec> = fc.record({
  call: fc.constantFrom<WriteSpec['call']>('write', 'writev', 'send', 'sendmsg'), sizes, position: fc.constantFrom<PositionSpec>('omitted', 'omitted', 'null', 5), adversary,
});
const index = fc.nat({ max: 7 });

const pick = <T>(list: T[], i: number): T | undefined => (list.length === 0 ? undefined : list[i % list.length]);

/** The commands of generators `gen`: version 1's, then what version 2 adds (a send that meets
 * a full socket, a peer that reads part, ops aborted in the kernel, pools closed while held),
 * then version 3's (a stream's pause() and resume(), cancelFd over a batch of reads), then
 * version 4's (bursts of completions, which overflow a CQ as small as the SQ). */
export function commandsOf(gen: number): fc.Arbitrary<Cmd>[] {
  if (gen === 1) return commands;
  // (the added ones twice: their paths need several of them in one sequence)
  if (gen === 2) return [...commands, ...added, ...added];
  if (gen === 3) return [...commands, ...added, ...added, ...third, ...third];
  if (gen === 4) return [...commands, ...added, ...added, ...third, ...third, ...fourth];
  throw new Error(`no generators of version ${gen} (1 to ${latestGen})`);
}

const commands: fc.Arbitrary<Cmd>[] = [
  fc.tuple(index, fc.integer({ min: 1, max: 400 })).map(([d, n]) => command(`the peer writes ${n} bytes to readable ${d}`, (w) => {
    w.peerWrite(pick(w.readable, d)!, n);
  }, true)),
  fc.tuple(index, fc.integer({ min: 1, max: 400 })).map(([d, n]) => command(`the peer writes ${n} bytes to socket ${d % 3}`, (w) => {
    w.peerWrite(pick(w.sockets, d)!, n);
  }, true)),
  index.map((d) => command(`the peer reads writable ${d}`, (w) => w.peerDrain(pick(w.writable, d)!), true)),
  fc.tuple(fc.integer({ min: 1, max: 64 }), fc.nat({ max: 3 })).map(([n, fds]) => command(`the peer sends a message of ${n} bytes and ${fds} fds`, (w) => w.peerSendMessage(n, fds), true)),
  fc.constant(command('the peer receives messages', (w) => w.peerReceiveMessages(), true)),
  index.map((d) => command(`the peer closes socket ${d % 3}`, (w) => w.peerClose(pick(w.sockets, d)!))),
  fc.tuple(index, readSpec).map(([d, s]) => command(`${s.call} of readable ${d} ${JSON.stringify(s)}`, (w) => readDuct(w, pick(w.readable, d)!, s, 'a command'))),
  fc.tuple(index, readSpec).map(([d, s]) => command(`${s.call} of socket ${d % 3} ${JSON.stringify(s)}`, (w) => readDuct(w, pick(w.sockets, d)!, s, 'a command'))),
  readSpec.map((s) => command(`${s.call} of the file ${JSON.stringify(s)}`, (w) => readFile(w, s, 'a command'))),
  fc.tuple(fc.option(index, { nil: undefined }), batchSpec).map(([d, s]) => command(`readvBatch of ${d === undefined ? 'the file' : `readable ${d}`} ${JSON.stringify(s)}`,
    (w) => readvBatch(w, d === undefined ? 'file' : pick(w.readable, d)!, s, 'a command'))),
  // every position given: the batch may take its direct path, also on a socket
  fc.tuple(index, fc.array(fc.record({ sizes: fc.array(fc.integer({ min: 1, max: 600 }), { minLength: 1, maxLength: 2 }), position: offset }),
    { minLength: 1, maxLength: 3 }), memory).map(([d, requests, mem]) =>
    command(`readvBatch of socket ${d % 3} at positions ${JSON.stringify(requests)}`, (w) => readvBatch(w, pick(w.sockets, d)!, { requests, memory: mem }, 'a command'))),
  fc.tuple(index, writeSpec).map(([d, s]) => command(`${s.call} to writable ${d} ${JSON.stringify(s)}`, (w) => writeDuct(w, pick(w.writable, d)!, s, 'a command'))),
  writeSpec.map((s) => command(`${s.call} to the file ${JSON.stringify(s)}`, (w) => writeFileCommand(w, s))),
  fc.tuple(sizes, fc.nat({ max: 3 }), adversary).map(([z, maxFds, a]) => command(`recvmsg on the seqpacket pair into ${z} (maxFds ${maxFds}) ${JSON.stringify(a)}`,
    (w) => recvmsgSeq(w, z.map((n) => n + 1), maxFds, a, 'a command'))),
  fc.tuple(fc.integer({ min: 1, max: 64 }), fc.nat({ max: 3 }), adversary).map(([n, fds, a]) => command(`sendmsg of ${n} bytes and ${fds} fds on the seqpacket pair ${JSON.stringify(a)}`,
    (w) => sendmsgSeq(w, n, fds, a, 'a command'))),
  fc.tuple(index, fc.nat({ max: 1 }), script).map(([d, p, s]) => command(`a stream on socket ${d % 3} from pool ${p} ${JSON.stringify(s)}`, (w) => {
    const duct = pick(w.sockets, d)!;
    if (duct.reader === undefined && duct.writer === undefined && !duct.peerClosed) openStream(w, duct, p % w.pools.length, s, 'a command');
  })),
  fc.tuple(index, script).map(([d, s]) => command(`a stream on socket ${d % 3} from pool 0 ${JSON.stringify(s)}`, (w) => {
    const duct = pick(w.sockets, d)!;
    if (duct.reader === undefined && duct.writer === undefined && !duct.peerClosed) openStream(w, duct, 0, s, 'a command');
  })),
  index.map((i) => command(`close stream ${i}`, (w) => pick(w.streams.filter((s) => !s.closeCalled), i)?.close('a command'))),
  index.map((i) => command(`release held buffer ${i}`, (w) => {
    const h = pick(w.held, i);
    if (h !== undefined) releaseHeld(w, h, 'a command');
  })),
  fc.tuple(index, index).map(([i, via]) => command(`send held buffer ${i} via stream ${via}`, (w) => {
    const h = pick(w.held, i);
    const s = h === undefined ? undefined : pick(w.streams.filter((x) => !x.finished && x.pool === h.pool), via);
    if (h !== undefined && s !== undefined) sendHeld(w, h, s);
  })),
  // (now and then more than the socket holds: the stream's sends wait for the peer, and past
  // its pauseAt it stops receiving until the peer reads)
  fc.tuple(index, fc.oneof({ arbitrary: fc.integer({ min: 1, max: 300 }), weight: 4 }, { arbitrary: fc.constant(1 << 18), weight: 1 })).map(([i, n]) => command(`stream ${i} writes a copy of ${n} bytes`, (w) => {
    const s = pick(w.streams.filter((x) => !x.finished), i);
    if (s !== undefined) writeCopy(w, s, taggedBytes(s.duct.outbound!.id, w.spec.seed + 17, s.duct.outbound!.length, n));
  })),
  fc.tuple(fc.nat({ max: 1 }), index).map(([p, id]) => command(`release buffer ${id} of pool ${p}, not held`, (w) => {
    const pool = p % w.pools.length;
    releaseNotHeld(w, pool, id % w.pools[pool].count, 'a command');
  })),
  index.map((d) => command(`cancelFd of duct ${d}`, (w) => cancelFd(w, pick(w.ducts, d)!, 'a command'))),
  // ring.close() ends what a sequence can do: a quarter of the others' chances
  fc.oneof({ arbitrary: fc.constant(command('ring.close()', (w) => w.closeRing('a command'))), weight: 1 },
    { arbitrary: fc.constant(command('wait a turn', () => {}, true)), weight: 3 }),
  fc.constant(command('a closed Ring throws RingClosedError', (w) => closedRingThrows(w), true)),
  fc.integer({ min: 1, max: 4 }).map((n) => command(`wait ${n} turns`, () => {}, true)),
];

/** A command that waits for what it started (stream.close() settling, say). */
function waitingCommand(describe: string, act: (world: World) => Promise<void>): Cmd {
  return {
    check: (m) => m.world.closing === undefined,
    async run(_m, world) {
      if (trace) fs.writeSync(1, `${JSON.stringify({ command: describe })}\n`);
      await act(world);
      await checkStep(world, describe);
    },
    toString: () => describe,
  };
}

// a stream that sends back what it gets (some held first), past a small pauseAt or not
const echoScript: fc.Arbitrary<StreamScript> = fc.record({
  reactions: fc.array(fc.constantFrom<Reaction>('echo', 'echo', 'echo', 'hold', 'copy', 'release'), { minLength: 1, maxLength: 3 }),
  onEnd: fc.constantFrom<EndReaction>('closeSelf', 'none'),
  pauseAt: fc.option(fc.integer({ min: 1, max: 8192 }), { nil: undefined }),
});

const added: fc.Arbitrary<Cmd>[] = [
  fc.tuple(index, fc.nat({ max: 1 }), echoScript).map(([d, p, s]) => command(`an echoing stream on socket ${d % 3} from pool ${p} ${JSON.stringify(s)}`, (w) => {
    const duct = pick(w.sockets, d)!;
    if (duct.reader === undefined && duct.writer === undefined && !duct.peerClosed) openStream(w, duct, p % w.pools.length, s, 'a command');
  })),
  // more than a small pool's buffers at once, up to more than the Ring's end holds
  fc.tuple(index, fc.integer({ min: 401, max: 1 << 16 })).map(([d, n]) => command(`the peer writes ${n} bytes to socket ${d % 3}`, (w) => {
    w.peerWrite(pick(w.sockets, d)!, n);
  }, true)),
  fc.tuple(index, fc.integer({ min: 1, max: 1024 })).map(([d, n]) => command(`the peer reads at most ${n} bytes of writable ${d}`, (w) => w.peerDrain(pick(w.writable, d)!, n), true)),
  fc.tuple(index, readSpec).map(([d, s]) => command(`${s.call} of socket ${d % 3} with the signal ${JSON.stringify(s)}`, (w) => readDuct(w, pick(w.sockets, d)!, { ...s, signal: true }, 'a command'))),
  fc.tuple(fc.option(index, { nil: undefined }), batchSpec).map(([d, s]) => command(`readvBatch of ${d === undefined ? 'the file' : `readable ${d}`} with the signal ${JSON.stringify(s)}`,
    (w) => readvBatch(w, d === undefined ? 'file' : pick(w.readable, d)!, { ...s, signal: true }, 'a command'))),
  fc.constant(command('abort the signal', (w) => abortOps(w))),
  fc.nat({ max: 1 }).map((p) => command(`close pool ${p}`, (w) => closePool(w, p % w.pools.length, 'a command'))),
  // a few bytes there, more reads than they fill: the first reads get them, the rest wait in
  // the kernel until the signal ends them (the batch fails partway)
  fc.tuple(index, fc.integer({ min: 1, max: 64 }), fc.array(fc.record({ sizes, position: fc.constant<PositionSpec>('omitted') }), { minLength: 2, maxLength: 4 }))
    .map(([d, n, requests]) => waitingCommand(`the peer writes ${n} bytes to socket ${d % 3}, a readvBatch of it ${JSON.stringify(requests)} with the signal, aborted`, async (w) => {
      const duct = pick(w.sockets, d)!;
      w.peerWrite(duct, n);
      readvBatch(w, duct, { requests, memory: 'heap', signal: true }, 'a command');
      await turn();
      await turn();
      abortOps(w);
    })),
  // messages with fds there, a recvmsgBatch of more, aborted: the ones it got go with it
  fc.tuple(fc.array(fc.nat({ max: 3 }), { maxLength: 3 }), fc.integer({ min: 1, max: 2 }), fc.nat({ max: 3 }))
    .map(([sent, more, maxFds]) => waitingCommand(`the peer sends messages with ${JSON.stringify(sent)} fds, a recvmsgBatch of ${sent.length + more} (maxFds ${maxFds}) with the signal, aborted`, async (w) => {
      if (w.seq.reader !== undefined) return;
      for (const fds of sent) w.peerSendMessage(16, fds);
      await recvmsgBatchAborted(w, w.seq.toRing.length + more, maxFds, turn);
    })),
  // an echoing stream the peer floods and does not read: its queue passes pauseAt, and from
  // then on it may take only what the pool held (streams.ts checks each chunk)
  // (copies: each buffer goes back at once, so only the pause stops the recv)
  fc.tuple(index, fc.constantFrom<Reaction[]>(['copy'], ['copy'], ['echo', 'copy']), fc.integer({ min: 1, max: 2048 }), fc.integer({ min: 4096, max: 1 << 16 }))
    .map(([d, reactions, pauseAt, n]) => waitingCommand(`an echoing stream on socket ${d % 3} from pool 1 ${JSON.stringify(reactions)} (pauseAt ${pauseAt}), the peer writes ${n} bytes 4 times`, async (w) => {
      const duct = pick(w.sockets, d)!;
      if (duct.reader !== undefined || duct.writer !== undefined || duct.peerClosed) return;
      if (openStream(w, duct, 1, { reactions, onEnd: 'closeSelf', pauseAt }, 'a command') === undefined) return;
      for (let i = 0; i < 4 && w.closing === undefined; i++) {
        w.peerWrite(duct, n);
        await turn();
        await turn();
      }
    })),
  // a copy, then one a byte longer than what a small send buffer takes at once (unix sockets
  // send in pieces of sndbuf/2 - 64): the second's send may stop a byte short of its end
  fc.tuple(index, fc.integer({ min: 1, max: 4000 })).map(([i, m]) => command(`stream ${i} writes a copy of ${m} bytes, then one of a send's piece and a byte`, (w) => {
    const s = pick(w.streams.filter((x) => !x.finished), i);
    if (s === undefined) return;
    const piece = (w.sndbuf ?? 4608) / 2 - 64 + 1;
    for (const n of [m, piece]) writeCopy(w, s, taggedBytes(s.duct.outbound!.id, w.spec.seed + 17, s.duct.outbound!.length, n));
  })),
  // its streams closed first (the buffers they gave JS still held), then the pool
  fc.nat({ max: 1 }).map((p) => waitingCommand(`close the streams of pool ${p}, then the pool`, async (w) => {
    const pool = p % w.pools.length;
    const streams = w.streams.filter((s) => s.pool === pool);
    for (const s of streams) s.close('a command');
    for (let i = 0; i < 100 && streams.some((s) => !s.finished); i++) await turn();
    closePool(w, pool, 'a command');
  })),
];

const third: fc.Arbitrary<Cmd>[] = [
  index.map((i) => command(`pause stream ${i}`, (w) => pick(w.streams.filter((s) => !s.closeCalled), i)?.pauseByUser(true))),
  index.map((i) => command(`resume stream ${i}`, (w) => pick(w.streams.filter((s) => !s.closeCalled), i)?.pauseByUser(false))),
  // a stream paused, then more than its pool holds from the peer: at most what the kernel had
  // taken comes (streams.ts checks each chunk), the rest waits in the socket until resume()
  fc.tuple(index, fc.nat({ max: 1 }), fc.integer({ min: 1, max: 1 << 16 }), fc.boolean())
    .map(([d, p, n, resume]) => waitingCommand(`a stream on socket ${d % 3} from pool ${p}, paused, the peer writes ${n} bytes${resume ? ', resumed' : ''}`, async (w) => {
      const duct = pick(w.sockets, d)!;
      if (duct.reader !== undefined || duct.writer !== undefined || duct.peerClosed) return;
      const s = openStream(w, duct, p % w.pools.length, { reactions: ['release'], onEnd: 'closeSelf' }, 'a command');
      if (s === undefined) return;
      await turn();
      s.pauseByUser(true);
      w.peerWrite(duct, n);
      for (let i = 0; i < 4; i++) await turn();
      if (resume) s.pauseByUser(false);
    })),
  // a few bytes there, more reads than they fill: cancelFd ends the reads still in the kernel
  fc.tuple(index, fc.integer({ min: 1, max: 64 }), fc.array(fc.record({ sizes, position: fc.constant<PositionSpec>('omitted') }), { minLength: 2, maxLength: 4 }))
    .map(([d, n, requests]) => waitingCommand(`the peer writes ${n} bytes to socket ${d % 3}, a readvBatch of it ${JSON.stringify(requests)}, cancelFd`, async (w) => {
      const duct = pick(w.sockets, d)!;
      if (duct.reader !== undefined || duct.writer !== undefined) return;
      w.peerWrite(duct, n);
      readvBatch(w, duct, { requests, memory: 'heap' }, 'a command');
      await turn();
      await turn();
      if (duct.reader !== undefined) coverage.cancelFdOverBatch++;
      cancelFd(w, duct, 'a command');
    })),
];

const fourth: fc.Arbitrary<Cmd>[] = [
  // many reads of the file asked at once: their CQEs come in one submit's worth, more than a
  // small CQ holds (the kernel keeps the rest and the Ring flushes them)
  fc.tuple(fc.integer({ min: 8, max: 120 }), fc.array(fc.record({ sizes, position: offset, memory: fc.constantFrom<Memory>('heap', 'shared') }), { minLength: 1, maxLength: 4 }))
    .map(([n, specs]) => command(`a burst of ${n} reads of the file ${JSON.stringify(specs)}`, (w) => {
      for (let i = 0; i < n; i++) readFile(w, { call: i % 2 === 0 ? 'read' : 'readv', adversary: undefined, ...specs[i % specs.length] }, 'a burst');
    })),
  // every socket and pipe written by the peer while reads wait there: their completions all
  // come at once, with no submit of the Ring's between
  fc.tuple(readSpec, fc.integer({ min: 1, max: 64 })).map(([s, n]) => waitingCommand(`a read waiting on every readable, then the peer writes ${n} bytes to each ${JSON.stringify(s)}`, async (w) => {
    const ducts = w.readable.filter((d) => d.reader === undefined && d.writer === undefined && !d.peerClosed);
    for (const d of ducts) readDuct(w, d, { ...s, adversary: undefined, position: 'omitted' }, 'a burst');
    await turn();
    for (const d of ducts) w.peerWrite(d, n);
  })),
];

function writeFileCommand(w: World, s: WriteSpec): void {
  const call = s.call === 'writev' || s.call === 'sendmsg' ? 'writev' : 'write';
  // position 5 of the sockets' specs is 4000 in the file: writes within its first 12,100 bytes
  writeFile(w, { ...s, call, position: s.position === 5 ? 4000 : s.position }, 'a command');
}

/** Once the Ring is closing, its async methods reject with RingClosedError and its sync ones
 * throw it (docs/api.md). */
function closedRingThrows(w: World): void {
  if (w.closing === undefined) return;
  const rejecting: [string, () => Promise<unknown>][] = [
    ['nop', () => w.ring.nop()],
    ['read', () => w.ring.read(w.file.ringFd, Buffer.alloc(4), 0)],
    ['readvBatch', () => w.ring.readvBatch(w.file.ringFd, [{ buffers: [Buffer.alloc(4)], position: 0 }])],
  ];
  for (const [name, call] of rejecting) {
    let p: Promise<unknown>;
    try {
      p = call();
    } catch (e) {
      w.fail(`${name} on a closed Ring threw ${(e as Error).stack}`);
      continue;
    }
    w.track(`${name} on a closed Ring`, p, () => w.fail(`${name} on a closed Ring resolved`), (e) => {
      if (!(e instanceof RingClosedError)) w.fail(`${name} on a closed Ring rejected with ${e.stack}`);
    });
  }
  const calls: [string, () => unknown][] = [
    ['recvMultishot', () => w.ring.recvMultishot(w.sockets[0].ringFd, w.pools[0], { data() {}, end() {} })],
  ];
  for (const [name, call] of calls) {
    try {
      const p = call() as Promise<unknown> | undefined;
      w.fail(`${name} on a closed Ring did not throw`);
      if (p instanceof Promise) p.catch(() => {});
    } catch (e) {
      if (!(e instanceof RingClosedError)) w.fail(`${name} on a closed Ring threw ${(e as Error).stack}`);
    }
  }
}
