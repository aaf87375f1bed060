// Client connections on the Ring for code that makes its own: `ringConnector()` is a
// createConnection for an http.Agent (or an https.Agent, or a request's createConnection
// option) and a `connect` for undici's Client, Pool and Agent. Each connection is a RingSocket
// (a TLS socket over one for https), connected through the Ring; the buffer pool they receive
// into is made with the first and freed with the last, so an agent that is done (destroy(),
// close()) leaves nothing behind.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { createRequire } from 'node:module';
import { bind, close, socket as newSocket } from '../syscalls.js';
import { RingSocketDuplex } from './duplex.js';
import type { BufferRing, Ring } from './ring.js';
import type { RingSocket } from './socket.js';
import { sharedRing } from './thread-ring.js';
import { tlsAddressesFrom } from './tls-addresses.js';

export interface RingConnectorOptions {
  /** The Ring the connections connect, receive and send on. Default: the thread's shared one. */
  ring?: Ring;
  /** The buffer pool they receive into (the caller's: never freed here). Default: one of
   * `bufferCount` x `bufferSize`, made with the first connection and freed with the last. */
  bufferRing?: BufferRing;
  /** Default 256 (a power of two, at most 32768). */
  bufferCount?: number;
  /** Default 4096 bytes. */
  bufferSize?: number;
  /** tls.connect's options for https connections (ca, rejectUnauthorized, ALPNProtocols...);
   * a request's own (an https.Agent's) are added to them. */
  tls?: object;
}

/** Where a connection goes, as an http.Agent or undici describes it. */
export interface RingConnectTarget {
  host?: string | null;
  /** undici's: the host without its port. */
  hostname?: string | null;
  port?: number | string | null;
  /** A Unix socket (an Agent's socketPath). */
  path?: string | null;
  family?: number;
  localAddress?: string | null;
  /** 'https:' (undici's): TLS over the connection. */
  protocol?: string | null;
  servername?: string | null;
  keepAlive?: boolean;
  noDelay?: boolean;
}

/** A createConnection (as http.Agent calls one) and a connect (as undici does): calls back with
 * the connected socket, or the error (the callback is needed: the connect is asynchronous). */
export interface RingConnect {
  (target: RingConnectTarget, callback?: (err: Error | null, socket: RingSocket) => void): undefined;
  (target: RingConnectTarget, callback: (...args: [null, RingSocket] | [Error, null]) => void): undefined;
}
type Callback = (err: Error | null, socket: RingSocket | null) => void;

type TlsModule = typeof import('node:tls');
let tlsModule: TlsModule | undefined;
/** What an Agent or undici puts in a connection's options besides tls.connect's (`host` is set
 * apart: undici's holds the port). */
const NOT_TLS = new Set(['host', 'hostname', 'port', 'path', 'family', 'localAddress', 'protocol', 'servername', 'keepAlive', 'keepAliveInitialDelay',
  'noDelay', 'agent', '_defaultAgent', '_agentKey', 'encoding', 'timeout', 'httpSocket', 'socket']);
const tls = () => (tlsModule ??= createRequire(import.meta.url)('node:tls') as TlsModule);

/** Addresses to try, in the resolver's order (IPv6 first where it says so); a numeric host as is. */
async function addressesOf(host: string, family: number | undefined): Promise<{ address: string; family: number }[]> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(bare) !== 0) return [{ address: bare, family: isIP(bare) }];
  return lookup(bare, { all: true, family: family === 4 || family === 6 ? family : 0 });
}

/** A createConnection for http.Agent and http.request, and a `connect` for undici: each
 * connection a RingSocket on the Ring (TLS over it for https). */
export function ringConnector(options: RingConnectorOptions = {}): RingConnect {
  if (options === null || typeof options !== 'object') {
    throw Object.assign(new TypeError('The "options" argument must be of type object'), { code: 'ERR_INVALID_ARG_TYPE' });
  }
  let pool: BufferRing | undefined;
  let users = 0;
  const poolFor = (ring: Ring): BufferRing => {
    if (options.bufferRing !== undefined) return options.bufferRing;
    pool ??= ring.setupBufRing({ count: options.bufferCount ?? 256, size: options.bufferSize ?? 4096 });
    users++;
    return pool;
  };
  const done = () => {
    if (options.bufferRing !== undefined || --users > 0 || pool === undefined) return;
    const own = pool;
    pool = undefined;
    try {
      own.close();
    } catch { /* the Ring closed: it freed the pool */ }
  };

  async function open(ring: Ring, target: RingConnectTarget): Promise<number> {
    if (typeof target.path === 'string' && target.path !== '') {
      const fd = newSocket('unix', 'stream');
      try {
        await ring.connect(fd, target.path);
        return fd;
      } catch (err) {
        close(fd);
        throw err;
      }
    }
    const https = target.protocol === 'https:';
    const port = Number(target.port) || (https ? 443 : 80);
    let failure: unknown;
    for (const { address, family } of await addressesOf(target.hostname ?? target.host ?? 'localhost', target.family)) {
      const fd = newSocket(family === 6 ? 'inet6' : 'inet', 'stream');
      try {
        if (target.localAddress) bind(fd, { host: target.localAddress, port: 0 });
        await ring.connect(fd, { host: address, port });
        return fd;
      } catch (err) {
        close(fd);
        failure = err; // the next address, as net tries each family
      }
    }
    throw failure;
  }

  return function connectOnRing(this: unknown, target: RingConnectTarget, callback: Callback): undefined {
    if (typeof callback !== 'function') {
      throw Object.assign(new TypeError('The "callback" argument must be of type function: the connection is made on the Ring, asynchronously'), { code: 'ERR_INVALID_ARG_TYPE' });
    }
    const ring = options.ring ?? sharedRing();
    // an https.Agent calls its createConnection as a method: its protocol says TLS
    const secure = target.protocol === 'https:' || (this as { protocol?: unknown } | undefined)?.protocol === 'https:';
    open(ring, secure ? { ...target, protocol: 'https:' } : target).then((fd) => {
      let raw: RingSocketDuplex;
      try {
        raw = new RingSocketDuplex(ring, fd, { bufferRing: poolFor(ring) });
      } catch (err) {
        close(fd);
        throw err;
      }
      raw.once('close', done);
      if (target.noDelay !== false) raw.setNoDelay(true);
      if (target.keepAlive) raw.setKeepAlive(true);
      if (!secure) return callback(null, raw as unknown as RingSocket);
      // the request's TLS options (an https.Agent's: ca, rejectUnauthorized...) over the connector's
      const tlsOptions: Record<string, unknown> = { ...options.tls };
      for (const [key, value] of Object.entries(target)) if (!NOT_TLS.has(key)) tlsOptions[key] = value as unknown;
      const name = target.servername ?? target.hostname ?? target.host;
      if (typeof name === 'string' && isIP(name) === 0) tlsOptions.servername = name;
      // the name the certificate is checked against where no servername is sent (an IP
      // address), as tls.connect takes it from a connection's host: never 'localhost' for it
      const asked = target.hostname ?? target.host;
      if (typeof asked === 'string') tlsOptions.host = asked.startsWith('[') && asked.endsWith(']') ? asked.slice(1, -1) : asked;
      const secured = tls().connect({ ...tlsOptions, socket: raw });
      tlsAddressesFrom(secured, raw);
      const failed = (err: unknown) => {
        secured.destroy();
        callback(err as Error, null);
      };
      secured.once('error', failed);
      secured.once('secureConnect', () => {
        secured.removeListener('error', failed);
        callback(null, secured as unknown as RingSocket);
      });
    }).catch((err: Error) => callback(err, null));
    return undefined;
  } as RingConnect;
}
