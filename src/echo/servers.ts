// The echo servers: one table entry each (old spellings of their names: src/aliases.ts).
import { native } from '../native.js';
import { startDuplexServer } from './duplex-server.js';
import { startNodeServer } from './node-server.js';
import { startRingServer } from './ring-server.js';
import type { EchoServerEntry, EchoServer, EchoServerOptions } from './types.js';

/** The C servers (native/echo/) run on a thread of their own inside this process. The addon
 * names the io_uring one 'uring'. */
function nativeServer(engine: 'uring' | 'epoll') {
  return async (options: EchoServerOptions): Promise<EchoServer> => {
    const handle = native.echoStartServer(engine, options);
    return {
      port: handle.port,
      stop: () => {
        handle.stop();
        return handle.done;
      },
      closed: handle.done,
    };
  };
}

export const echoServers = {
  io_uring: { summary: 'C, io_uring', start: nativeServer('uring') },
  epoll: { summary: 'C, epoll', start: nativeServer('epoll') },
  node: { summary: 'the net module', start: startNodeServer },
  ring: { summary: "TypeScript on iolab's Ring", start: startRingServer },
  duplex: { summary: "node:stream sockets (RingSocket) on iolab's Ring", start: startDuplexServer },
} satisfies Record<string, EchoServerEntry>;

export type EchoServerName = keyof typeof echoServers;
export const echoServerNames = Object.keys(echoServers) as EchoServerName[];

/** The longest idle timeout, one every server honours: the C servers take up to 10^9 ms; Node's
 * timers (the node and duplex servers) hold at most 2^31-1 ms (24.8 days) and beyond it fire
 * after 1 ms. */
export const IDLE_TIMEOUT_MAX_MS = 1e9;

export function startEchoServer(server: EchoServerName, options: EchoServerOptions): Promise<EchoServer> {
  const idle = options.idleTimeoutMs;
  if (idle !== undefined && !(Number.isInteger(idle) && idle >= 0 && idle <= IDLE_TIMEOUT_MAX_MS)) {
    return Promise.reject(new RangeError(`idleTimeoutMs: expected whole milliseconds up to ${IDLE_TIMEOUT_MAX_MS}, got ${idle}`));
  }
  return echoServers[server].start(options);
}
