// Setting a channel up (src/ring/channel.ts's Channel.create and Channel.join): the creating
// side makes the region (native/channel_binding.cc) and sends it over the socket with a hello;
// the joining side receives it, and the addon checks and maps it. Each side gets its end and
// the Ring its thread's channels share to wait through.
import { native, type NativeChannelEnd } from '../native.js';
import { Ring } from './ring.js';

export interface ChannelOptions {
  /** Bytes of each direction's ring: a power of two from 4 KiB to 1 GiB (default 4 MiB). A
   * message is at most half of it, less 8 bytes (`channel.maxMessageBytes`). */
  capacity?: number;
  /** Receive messages as views of the queue (no copy) instead of copies: each view is valid
   * until the next message is asked for (the next receive(), the listener's return) or close(),
   * after which the queue's memory carries other messages. Default false. */
  zeroCopy?: boolean;
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

export function channelError(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

function checkOptions(options: unknown): { capacity: number; zeroCopy: boolean } {
  if (options === undefined || options === null) return { capacity: defaultCapacity, zeroCopy: false };
  if (typeof options !== 'object') {
    throw Object.assign(new TypeError(`The "options" argument must be of type object. Received type ${typeof options}`), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  const { capacity = defaultCapacity, zeroCopy = false } = options as ChannelOptions;
  if (typeof zeroCopy !== 'boolean') {
    throw Object.assign(new TypeError(`The "options.zeroCopy" property must be of type boolean. Received type ${typeof zeroCopy}`), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  return { capacity, zeroCopy };
}

/** The creator's hello and the memfd it carries, or ERR_CHANNEL_PROTOCOL. Every fd that came
 * is kept until the end, so each one is closed when the hello is refused: a hello in pieces
 * can carry an fd with each piece. */
async function receiveHello(ring: Ring, socket: number): Promise<number> {
  const got = Buffer.alloc(hello.length);
  const fds: number[] = [];
  for (let have = 0; have < got.length;) {
    const r = await ring.recvmsg(socket, [got.subarray(have)], { maxFds: 1 });
    fds.push(...r.fds);
    if (r.eof || r.fdsTruncated || fds.length > 1) {
      await ring.closeFds(fds);
      throw channelError('ERR_CHANNEL_PROTOCOL', r.eof ? 'the other side closed the socket before it passed a channel' : 'the other side passed more fds than a channel does');
    }
    have += r.bytesRead;
  }
  if (got.toString('latin1') !== hello || fds.length !== 1) {
    await ring.closeFds(fds);
    throw channelError('ERR_CHANNEL_PROTOCOL', 'what came over the socket is not a channel (the other side did not create one)');
  }
  return fds[0];
}

/** The creating side's end, its region passed over socket. */
export async function createEnd(socket: number, options: unknown): Promise<Setup> {
  const { capacity, zeroCopy } = checkOptions(options);
  native.channelClaim(socket);
  let end: NativeChannelEnd | undefined;
  let ring: Ring | undefined;
  try {
    ring = acquireRing();
    end = native.channelCreate(socket, capacity);
    // before the hello: the joiner's first byte then carries its pid (the Channel watches it)
    native.setPassCredentials(end.socket, true);
    await ring.sendmsg(end.socket, [Buffer.from(hello)], { fds: [end.memfd] });
    end.passed();
  } catch (err) {
    if (end === undefined) native.channelUnclaim(socket);
    end?.free(); // the end holds the claim: freeing it lets the socket go
    if (ring !== undefined) await releaseRing(ring);
    throw err;
  }
  return { end, ring, zeroCopy };
}

interface Setup {
  end: NativeChannelEnd;
  ring: Ring;
  zeroCopy: boolean;
}

/** The joining side's end, over the region that came over socket. */
export async function joinEnd(socket: number, options: unknown): Promise<Setup> {
  const { zeroCopy } = checkOptions(options);
  // before the hello is read: a second join would take bytes meant for the first channel
  native.channelClaim(socket);
  let ring: Ring | undefined;
  try {
    ring = acquireRing();
    const memfd = await receiveHello(ring, socket);
    const end = native.channelJoin(socket, memfd);
    // this side's pid goes to the creator with a byte; the creator's comes back with its answer
    native.setPassCredentials(end.socket, true);
    end.wake();
    return { end, ring, zeroCopy };
  } catch (err) {
    native.channelUnclaim(socket);
    if (ring !== undefined) await releaseRing(ring);
    throw err;
  }
}
