// Setting a channel up (src/ring/channel.ts's Channel.create and Channel.join): the creating
// side makes the region (native/channel_binding.cc) and sends it over the socket with a hello;
// the joining side receives it, and the addon checks and maps it. Each side gets its end and a
// Ring of its own to wait through.
import { native, type NativeChannelEnd } from '../native.js';
import { Ring } from './ring.js';

export interface ChannelOptions {
  /** Bytes of each direction's ring: a power of two from 4 KiB to 1 GiB (default 4 MiB). A
   * message is at most half of it, less 8 bytes (`channel.maxMessageBytes`). */
  capacity?: number;
}

/** What the creating side sends with the memfd: the region's magic, as a check of the socket. */
const hello = 'iolabch1';
const defaultCapacity = 4 << 20;

export function channelError(code: string, message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

function checkOptions(options: unknown): number {
  if (options === undefined || options === null) return defaultCapacity;
  if (typeof options !== 'object') {
    throw Object.assign(new TypeError(`The "options" argument must be of type object. Received type ${typeof options}`), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  return (options as ChannelOptions).capacity ?? defaultCapacity;
}

/** The creator's hello and the memfd it carries, or ERR_CHANNEL_PROTOCOL. */
async function receiveHello(ring: Ring, socket: number): Promise<number> {
  const got = Buffer.alloc(hello.length);
  let fds: number[] = [];
  for (let have = 0; have < got.length;) {
    const r = await ring.recvmsg(socket, [got.subarray(have)], { maxFds: 1 });
    if (r.fds.length > 0) fds = r.fds;
    if (r.eof || r.fdsTruncated) {
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
export async function createEnd(socket: number, options: unknown): Promise<{ end: NativeChannelEnd; ring: Ring }> {
  const capacity = checkOptions(options);
  const ring = new Ring({ entries: 8 });
  let end: NativeChannelEnd | undefined;
  try {
    end = native.channelCreate(socket, capacity);
    await ring.sendmsg(end.socket, [Buffer.from(hello)], { fds: [end.memfd] });
    end.passed();
  } catch (err) {
    end?.free();
    await ring.close();
    throw err;
  }
  return { end, ring };
}

/** The joining side's end, over the region that came over socket. */
export async function joinEnd(socket: number): Promise<{ end: NativeChannelEnd; ring: Ring }> {
  const ring = new Ring({ entries: 8 });
  try {
    const memfd = await receiveHello(ring, socket);
    return { end: native.channelJoin(socket, memfd), ring };
  } catch (err) {
    await ring.close();
    throw err;
  }
}
