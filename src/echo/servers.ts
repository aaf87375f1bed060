// The echo server engines: one table entry each.
import { native } from '../native.js';
import { startDuplexServer } from './duplex-server.js';
import { startNodeServer } from './node-server.js';
import { startRingServer } from './ring-server.js';
import type { EchoEngineEntry, EchoServer, EchoServerOptions } from './types.js';

/** The C servers (native/echo/) run on a thread of their own inside this process. */
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
  uring: { summary: 'C, io_uring', start: nativeServer('uring') },
  epoll: { summary: 'C, epoll', start: nativeServer('epoll') },
  node: { summary: 'the net module', start: startNodeServer },
  ring: { summary: "TypeScript on iolab's Ring", start: startRingServer },
  duplex: { summary: "node:stream sockets (RingSocket) on iolab's Ring", start: startDuplexServer },
} satisfies Record<string, EchoEngineEntry>;

export type EchoEngine = keyof typeof echoServers;
export const echoEngines = Object.keys(echoServers) as EchoEngine[];

export function startEchoServer(engine: EchoEngine, options: EchoServerOptions): Promise<EchoServer> {
  return echoServers[engine].start(options);
}
