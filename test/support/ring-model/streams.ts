// Streams in the Ring's model-based test: a recvMultishot on one of the world's sockets whose
// handlers follow a script, one reaction per chunk, some of them re-entering the Ring (closing
// the stream or the Ring, opening another stream, starting an op, throwing). Every chunk is
// checked against the socket's channel; a handler called after `end`, a second `end`, a buffer
// handed out twice or a chunk after close() is a violation.
import type { RingStream } from '../../../src/index.js';
import { releaseHeld, releaseNotHeld, sendHeld, writeCopy } from './held.js';
import { coverage, type Duct, type Held, type StreamLike, type World } from './world.js';

export type Reaction =
  | 'release' | 'hold' | 'echo' | 'copy' | 'closeSelf' | 'closeSelfOpenOther' | 'openOther'
  | 'closeRing' | 'startRecv' | 'releaseTwice' | 'throw' | 'sendViaOther';
export type EndReaction = 'none' | 'closeSelf' | 'closeRing' | 'openOther' | 'throw';

export interface StreamScript {
  reactions: Reaction[];
  onEnd: EndReaction;
  pauseAt?: number;
}

const plain: StreamScript = { reactions: ['release'], onEnd: 'closeSelf' };

export class ModelStream implements StreamLike {
  readonly name: string;
  stream!: RingStream;
  chunks = 0;
  ended = false;
  /** close() was called: from then on no chunk may reach the handler. */
  closeCalled = false;
  /** close() settled: the socket is free for the next reader and writer. */
  finished = false;
  /** The socket's cancelFd count when it opened. */
  cancels = 0;

  /** pause() was called and resume() not since; bytes that came to `data` meanwhile. */
  userPaused = false;
  bytesAfterPause = 0;

  readonly pauseAt: number;
  /** Bytes received while its queued bytes were past pauseAt, since the window began: the
   * first chunk seen past pauseAt, with `windowQueued` queued and `windowSent` gone out. */
  pausedBytes = 0;
  peerReadsSeen = 0;
  windowQueued = 0;
  windowSent = 0;

  constructor(readonly world: World, readonly duct: Duct, readonly pool: number, readonly script: StreamScript, where: string) {
    this.pauseAt = script.pauseAt ?? 65536;
    this.name = `stream ${++world.streamsMade} on ${duct.name} (opened ${where})`;
  }

  /** Opens it: the socket's reader and writer from now until close() settles. Returns false
   * when the call threw as it was allowed to (the Ring closed). */
  open(): boolean {
    const { world, duct } = this;
    duct.reader = duct.writer = this.name;
    this.cancels = duct.cancels;
    try {
      this.stream = world.ring.recvMultishot(duct.ringFd, world.pools[this.pool], {
        data: (id, length) => this.#data(id, length),
        end: (err) => this.#end(err),
      }, this.script.pauseAt === undefined ? undefined : { pauseAt: this.script.pauseAt });
    } catch (e) {
      duct.reader = duct.writer = undefined;
      const closedPool = world.poolClosed[this.pool] && (e as { code?: string }).code === 'ERR_RING_BUFFER_RING_CLOSED';
      if (!closedPool && !world.expectedError(e, duct)) world.fail(`${this.name}: recvMultishot threw ${(e as Error).stack}`);
      return false;
    }
    if (world.poolClosed[this.pool]) world.fail(`${this.name}: recvMultishot on a closed pool did not throw`);
    coverage.streamsOpened++;
    world.streams.push(this);
    return true;
  }

  /** stream.close(), once: chunks that come after are the Ring's to drop. */
  close(where: string): void {
    if (this.closeCalled) return;
    this.closeCalled = true;
    const { world, duct } = this;
    duct.inbound!.allowGap();
    let closing: Promise<void>;
    try {
      closing = this.stream.close();
    } catch (e) {
      world.fail(`${this.name}: close() from ${where} threw ${(e as Error).stack}`);
      return;
    }
    const done = () => {
      this.finished = true;
      duct.outbound!.markResume();
      if (duct.reader === this.name) duct.reader = undefined;
      if (duct.writer === this.name) duct.writer = undefined;
    };
    world.track(`${this.name}: close() from ${where}`, closing, done, (e) => {
      done();
      // a send's error that `end` did not give (the peer went away, a cancelFd)
      if (!world.expectedError(e, duct, this.cancels)) world.fail(`${this.name}: close() rejected with ${e.stack}`);
    });
  }

  /** pause() (or resume()): receiving stops, but for what the kernel had already taken. */
  pauseByUser(on: boolean): void {
    if (this.closeCalled || this.finished || this.userPaused === on) return;
    try {
      if (on) this.stream.pause();
      else this.stream.resume();
    } catch (e) {
      if (!(this.world.closing !== undefined && this.world.expectedError(e, this.duct))) this.world.fail(`${this.name}: ${on ? 'pause' : 'resume'}() threw ${(e as Error).stack}`);
      return;
    }
    this.userPaused = on;
    this.bytesAfterPause = 0;
    if (!on) coverage.userResumed++;
  }

  #data(id: number, length: number): void {
    const { world, duct } = this;
    if (this.ended) world.fail(`${this.name}: data(${id}, ${length}) after end`);
    if (this.closeCalled) world.fail(`${this.name}: data(${id}, ${length}) after close() was called`);
    const poolRing = world.pools[this.pool];
    if (world.held.some((h) => h.pool === this.pool && h.id === id)) world.fail(`${this.name}: buffer ${id} handed to JS while JS still held it`);
    const bytes = Buffer.from(poolRing.bytes(id, length));
    this.#pausedCheck(length);
    this.#afterPauseCheck(length);
    const wrong = duct.inbound!.deliver(bytes, this.name);
    if (wrong !== undefined) world.fail(wrong);
    const held: Held = { pool: this.pool, id, bytes };
    world.held.push(held);
    const reaction = world.quiescing ? 'release' : this.script.reactions[this.chunks % this.script.reactions.length];
    this.chunks++;
    this.#react(reaction, held);
  }

  /** Past its pauseAt, a stream stops receiving: what the kernel had put in buffers before the
   * cancel still comes (at most the pool, twice for a cancel racing the buffers given back),
   * no more until it resumes, which takes its queue down to pauseAt or under: until
   * `windowQueued - pauseAt` bytes went out (none while the peer does not read and the socket
   * is full), it cannot have. */
  #pausedCheck(length: number): void {
    const { world, duct } = this;
    if (world.closing !== undefined || this.closeCalled) return;
    const queued = this.stream.queuedBytes;
    const sent = duct.outbound!.length - queued;
    const mayHaveResumed = this.pausedBytes > 0 && sent - this.windowSent >= this.windowQueued - this.pauseAt;
    if (duct.peerReads !== this.peerReadsSeen || queued <= this.pauseAt || mayHaveResumed) {
      this.peerReadsSeen = duct.peerReads;
      this.pausedBytes = 0;
      if (queued <= this.pauseAt) return;
    }
    if (this.pausedBytes === 0) {
      this.windowQueued = queued;
      this.windowSent = sent;
    }
    coverage.chunksWhilePaused++;
    this.pausedBytes += length;
    if (this.pausedBytes > this.#mayStillCome()) {
      world.fail(`${this.name}: received ${this.pausedBytes} bytes with ${this.stream.queuedBytes} queued to send, past its pauseAt ${this.pauseAt}: receiving did not pause`);
    }
  }

  /** After pause(), only the chunks the kernel took before its cancel may come: at most the
   * pool's bytes, twice for a cancel racing buffers given back (as past pauseAt). */
  #afterPauseCheck(length: number): void {
    if (!this.userPaused || this.world.closing !== undefined) return;
    coverage.chunksAfterPause++;
    this.bytesAfterPause += length;
    if (this.bytesAfterPause > this.#mayStillCome()) {
      this.world.fail(`${this.name}: received ${this.bytesAfterPause} bytes after pause(): receiving did not stop`);
    }
  }

  /** What the kernel may have taken before a cancel stopped the recv: the pool's bytes, twice
   * for a cancel racing buffers given back. */
  #mayStillCome(): number {
    const { count, size } = this.world.pools[this.pool];
    return 2 * count * size;
  }

  #react(reaction: Reaction, held: Held): void {
    const { world } = this;
    switch (reaction) {
      case 'hold':
        return;
      case 'release':
      case 'startRecv':
      case 'throw':
      case 'openOther':
      case 'closeRing':
        releaseHeld(world, held, this.name);
        if (reaction === 'startRecv') world.reenter('startRecv', `${this.name}'s data handler`);
        if (reaction === 'openOther') {
          coverage.openInDataHandler++;
          world.reenter('openStream', `${this.name}'s data handler`);
        }
        if (reaction === 'closeRing') {
          coverage.ringClosedInHandler++;
          world.closeRing(`${this.name}'s data handler`);
        }
        if (reaction === 'throw') {
          world.plannedThrows++;
          throw new Error('planned: a data handler throws');
        }
        return;
      case 'echo':
        sendHeld(world, held, this);
        return;
      case 'sendViaOther': {
        // (ids are per pool: another stream of the same pool)
        const other = world.streams.find((s) => s !== this && s.pool === this.pool && !s.closeCalled && !s.finished);
        sendHeld(world, held, other ?? this);
        return;
      }
      case 'copy':
        writeCopy(world, this, held.bytes);
        releaseHeld(world, held, this.name);
        return;
      case 'releaseTwice':
        releaseHeld(world, held, this.name);
        releaseNotHeld(world, held.pool, held.id, `${this.name}'s data handler`);
        return;
      case 'closeSelf':
      case 'closeSelfOpenOther':
        coverage.closeInDataHandler++;
        // close first, then give the buffer back: nothing of the stream is in flight then
        // when the kernel had ended the recv, which is the case that reuses its slot at once
        this.close('its own data handler');
        releaseHeld(world, held, this.name);
        if (reaction === 'closeSelfOpenOther') {
          coverage.closeThenOpenInDataHandler++;
          world.reenter('openStream', `${this.name}'s data handler, after closing it`);
        }
        return;
    }
  }

  #end(err: Error | null): void {
    const { world, duct } = this;
    if (this.ended) world.fail(`${this.name}: end called twice (${err?.message})`);
    this.ended = true;
    if (err !== null && !world.expectedError(err, duct, this.cancels)) world.fail(`${this.name}: end(${err.stack})`);
    if (err !== null) {
      duct.inbound!.allowGap(); // chunks the kernel had taken after the error go back
      duct.outbound!.allowShortEnd(); // the queued sends are dropped
    }
    if (err === null && !duct.peerClosed) world.fail(`${this.name}: end(null) (EOF) while its peer is open`);
    if (err === null && duct.peerClosed) coverage.endAfterPeerClose++;
    const onEnd = world.quiescing ? 'closeSelf' : this.script.onEnd;
    if (onEnd === 'closeSelf') this.close('its end handler');
    else if (onEnd === 'closeRing') {
      coverage.ringClosedInHandler++;
      world.closeRing(`${this.name}'s end handler`);
    }
    else if (onEnd === 'openOther') world.reenter('openStream', `${this.name}'s end handler`);
    else if (onEnd === 'throw') {
      // reported as dispatch reports a data handler's, also when ring.close() ends the stream
      world.plannedThrows++;
      throw new Error('planned: an end handler throws');
    }
  }
}

/** Opens a stream on a free socket with the given script (or one that releases every chunk). */
export function openStream(world: World, duct: Duct, pool: number, script: StreamScript | undefined, where: string): ModelStream | undefined {
  const s = new ModelStream(world, duct, pool, script ?? plain, where);
  return s.open() ? s : undefined;
}
