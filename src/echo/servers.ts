// One face for every echo server engine: start on HOST:PORT, stop -> what it served.
import { native, type EchoServerStats } from '../native.js';
import { startNodeServer } from './node-server.js';
import { startRingServer } from './ring-server.js';

export const echoEngines = ['uring', 'epoll', 'node', 'ring'] as const;
export type EchoEngine = (typeof echoEngines)[number];

export interface EchoServerOptions {
  /** Numeric address. */
  host: string;
  port: number;
  maxConns?: number;
}

export interface EchoServer {
  port: number;
  /** Stops accepting, closes every connection; resolves once all is closed. */
  stop(): Promise<EchoServerStats>;
  /** Settles when the server has ended: after stop(), or rejected when it failed on its own. */
  closed: Promise<EchoServerStats>;
}

export async function startEchoServer(engine: EchoEngine, options: EchoServerOptions): Promise<EchoServer> {
  switch (engine) {
    case 'uring':
    case 'epoll': {
      const handle = native.echoStartServer(engine, options);
      return {
        port: handle.port,
        stop: () => {
          handle.stop();
          return handle.done;
        },
        closed: handle.done,
      };
    }
    case 'node':
      return startNodeServer(options);
    case 'ring':
      return startRingServer(options);
  }
}
