// Setting a channel up (src/ring/channel.ts's Channel.create and Channel.join): the creating
// side makes the region (native/channel_binding.cc) and sends it over the socket with a hello;
// the joining side receives it, and the addon checks and maps it. Each side gets its end and
// the Ring its thread's channels share to wait through. While a side waits for the other (the
// joiner for the hello, the creator for room to send it), the caller's signal and timeout end
// the wait, and so does the end of the process at the other end of the socket.
import { native, type NativeChannelEnd } from '../native.js';
import { performance } from 'node:perf_hooks';
import { close, waitFd } from '../syscalls.js';
import { AbortError, readOpOptions } from './op-options.js';
import { Ring, ringPollIn } from './ring.js';

export interface ChannelOptions {
  /** Bytes of each direction's ring: a power of two from 4 KiB to 1 GiB (default 4 MiB). A
   * message is at most half of it, less 8 bytes (`channel.maxMessageBytes`). */
  capacity?: number;
  /** Receive messages as views of the queue (no copy) instead of copies: each view is valid
   * until the next message is asked for (the next receive(), the listener's return) or close(),
   * after which the queue's memory carries other messages. Default false. */
  zeroCopy?: boolean;
  /** Microseconds (0 to 1000, default 20) this side may wait for a message, or for room, by
   * looking at the queue without sleeping, before it sleeps until the other side wakes it: while
   * the other side answers within that (a request and its reply), neither side makes a syscall
   * for it. The event loop waits that long at most, and only after a wait that was short. 0:
   * always sleep at once. */
  spin?: number;
  /** Aborting it ends the wait for the other side (join: for its hello; create: for room to send
   * the hello): the Promise rejects with an AbortError and nothing is left behind. */
  signal?: AbortSignal;
  /** Milliseconds (> 0) create or join may wait for the other side; then ETIMEDOUT. */
  timeout?: number;
}

/** The Ring the channels of this thread wait through (a module instance is per thread), and
 * how many use it: an io_uring instance each would cost an fd, a mapping and a wake-up path per
 * channel. Closed when the last channel lets it go, so an idle program holds none. */
let shared: { ring: Ring; users: number } | undefined;

export function acquireRing(): Ring {
  if (shared === undefined) shared = { ring: new Ring(), users: 0 };
  shared.users++;
  return shared.ring;
}

/** A channel is done with the Ring: every op it had there has settled. */
export function releaseRing(ring: Ring): Promise<void> {
  if (shared === undefined || shared.ring !== ring || --shared.users > 0) return Promise.resolve();
  shared = undefined;
  return ring.close();
}

/** What the creating side sends with the memfd: the region's magic, as a check of the socket. */
const hello = 'iolabch1';
const defaultCapacity = 4 << 20;
/** A round trip between two JS sides takes ~5-10 us when neither sleeps (bench api's ping-pong). */
const defaultSpinUs = 20;

export function channelError(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

interface CheckedOptions {
  capacity: number;
  zeroCopy: boolean;
  spinNs: number;
  signal: AbortSignal | undefined;
  timeout: number;
}

function checkOptions(options: unknown): CheckedOptions {
  if (options === undefined || options === null) return { capacity: defaultCapacity, zeroCopy: false, spinNs: defaultSpinUs * 1000, signal: undefined, timeout: 0 };
  // (options that are no object: readOpOptions below refuses them, in Node's words)
  const { capacity = defaultCapacity, zeroCopy = false, spin = defaultSpinUs } = options as ChannelOptions;
  if (typeof zeroCopy !== 'boolean') {
    throw Object.assign(new TypeError(`The "options.zeroCopy" property must be of type boolean. Received type ${typeof zeroCopy}`), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  if (typeof spin !== 'number') {
    throw Object.assign(new TypeError(`The "options.spin" property must be of type number. Received type ${typeof spin}`), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  if (!(spin >= 0 && spin <= 1000)) {
    throw Object.assign(new RangeError(`The value of "options.spin" is out of range. It must be >= 0 and <= 1000. Received ${spin}`), { code: 'ERR_OUT_OF_RANGE' });
  }
  const { signal, timeout } = readOpOptions(options);
  if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason }); // nothing claimed or made
  return { capacity, zeroCopy, spinNs: Math.round(spin * 1000), signal, timeout };
}

/** A setup's wait for the other side: the caller's signal, and the process at the other end of
 * the socket (SO_PEERCRED), whose pidfd is polled on the Ring, so that its end is told even
 * while a copy of its socket is left open elsewhere (which keeps the socket from ending). The
 * Ring ops of the setup take `signal`; `timeout` is each op's. */
class SetupWait {
  readonly #controller = new AbortController();
  readonly signal = this.#controller.signal;
  readonly #ring: Ring;
  readonly #socket: number;
  readonly #readsHello: boolean;
  readonly #pidfd: number;
  #poll: Promise<void> | undefined;
  #polling = false;
  /** Set once the other side's process ended: what the setup rejects with. */
  #gone: Error | undefined;
  #ended = false;
  readonly #unlink: (() => void) | undefined;

  /** readsHello: the joiner, for whom bytes already waiting on the socket outlive their sender. */
  constructor(ring: Ring, socket: number, callerSignal: AbortSignal | undefined, readsHello: boolean) {
    this.#ring = ring;
    this.#socket = socket;
    this.#readsHello = readsHello;
    this.#pidfd = native.channelPeerPidfd(socket);
    if (callerSignal !== undefined) {
      const onAbort = () => this.#controller.abort(callerSignal.reason);
      callerSignal.addEventListener('abort', onAbort, { once: true });
      this.#unlink = () => callerSignal.removeEventListener('abort', onAbort);
    }
    if (this.#pidfd === -1) this.#peerEnded();
    else if (this.#pidfd >= 0) {
      this.#polling = true;
      this.#poll = ringPollIn(ring, this.#pidfd).then(() => this.#peerEnded(), () => {}).finally(() => {
        this.#polling = false;
      });
    }
  }

  /** The other side's process ended: the wait ends with ERR_CHANNEL_PEER_GONE, unless bytes it
   * sent before wait on the socket for the joiner (a hello: the setup reads and judges it). */
  #peerEnded(): void {
    if (this.#ended || (this.#readsHello && waitFd(this.#socket, 'read', 0))) return;
    this.#gone = channelError('ERR_CHANNEL_PEER_GONE',
      `the process at the other end of the socket (pid ${native.peerCredentials(this.#socket).pid}) ended before the channel was set up`);
    this.#controller.abort();
  }

  /** What the setup rejects with: the other side's end rather than the cancel it caused. */
  reason(err: unknown): unknown {
    return this.#gone ?? err;
  }

  /** Stops watching; resolves once the pidfd's poll has settled and the pidfd is closed. */
  async end(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    this.#unlink?.();
    if (this.#polling) this.#ring.cancelFd(this.#pidfd).catch(() => {});
    await this.#poll;
    if (this.#pidfd >= 0) close(this.#pidfd);
  }
}

/** The creator's hello and the memfd it carries, or ERR_CHANNEL_PROTOCOL. Every fd that came
 * is kept until the end, so each one is closed when the hello is refused or the wait ends: a
 * hello in pieces can carry an fd with each piece. */
async function receiveHello(ring: Ring, socket: number, wait: { signal: AbortSignal; timeout: number }): Promise<number> {
  const got = Buffer.alloc(hello.length);
  const fds: number[] = [];
  const deadline = performance.now() + wait.timeout;
  try {
    for (let have = 0; have < got.length;) {
      // a hello in pieces waits for the rest within what is left of the timeout
      const timeout = wait.timeout === 0 ? undefined : Math.max(1, Math.ceil(deadline - performance.now()));
      const r = await ring.recvmsg(socket, [got.subarray(have)], { maxFds: 1, signal: wait.signal, timeout });
      fds.push(...r.fds);
      if (r.eof) throw channelError('ERR_CHANNEL_PROTOCOL', 'the other side closed the socket before it passed a channel');
      if (r.fdsTruncated || fds.length > 1) throw channelError('ERR_CHANNEL_PROTOCOL', 'the other side passed more fds than a channel does');
      have += r.bytesRead;
    }
    if (got.toString('latin1') !== hello || fds.length !== 1) {
      throw channelError('ERR_CHANNEL_PROTOCOL', 'what came over the socket is not a channel (the other side did not create one)');
    }
  } catch (err) {
    await ring.closeFds(fds);
    throw err;
  }
  return fds[0];
}

/** The creating side's end, its region passed over socket. */
export async function createEnd(socket: number, options: unknown): Promise<Setup> {
  const { capacity, zeroCopy, spinNs, signal, timeout } = checkOptions(options);
  native.channelClaim(socket);
  let end: NativeChannelEnd | undefined;
  let ring: Ring | undefined;
  let wait: SetupWait | undefined;
  try {
    ring = acquireRing();
    end = native.channelCreate(socket, capacity);
    // before the hello: the joiner's first byte then carries its pid (the Channel watches it)
    native.setPassCredentials(end.socket, true);
    wait = new SetupWait(ring, end.socket, signal, false);
    await ring.sendmsg(end.socket, [Buffer.from(hello)], { fds: [end.memfd], signal: wait.signal, timeout: timeout || undefined });
    end.passed();
  } catch (err) {
    if (end === undefined) native.channelUnclaim(socket);
    await wait?.end();
    end?.free(); // the end holds the claim: freeing it lets the socket go
    if (ring !== undefined) await releaseRing(ring);
    throw wait?.reason(err) ?? err;
  }
  await wait.end();
  return { end, ring, zeroCopy, spinNs };
}

export interface Setup {
  end: NativeChannelEnd;
  ring: Ring;
  zeroCopy: boolean;
  spinNs: number;
}

/** The joining side's end, over the region that came over socket. */
export async function joinEnd(socket: number, options: unknown): Promise<Setup> {
  const { zeroCopy, spinNs, signal, timeout } = checkOptions(options);
  // before the hello is read: a second join would take bytes meant for the first channel
  native.channelClaim(socket);
  let ring: Ring | undefined;
  let wait: SetupWait | undefined;
  try {
    ring = acquireRing();
    wait = new SetupWait(ring, socket, signal, true);
    const memfd = await receiveHello(ring, socket, { signal: wait.signal, timeout });
    await wait.end();
    const end = native.channelJoin(socket, memfd);
    // this side's pid goes to the creator with a byte; the creator's comes back with its answer
    native.setPassCredentials(end.socket, true);
    end.wake();
    return { end, ring, zeroCopy, spinNs };
  } catch (err) {
    native.channelUnclaim(socket);
    await wait?.end();
    if (ring !== undefined) await releaseRing(ring);
    throw wait?.reason(err) ?? err;
  }
}
