// A net.Server (node:http's, node:https', fastify's, or net.createServer's) listening on a
// Ring: `onRing(server)` gives the server a listen() whose accepts are io_uring ops and whose
// connections are RingSockets. Everything else stays the server's own: net.Server's close(),
// address(), getConnections(), ref()/unref(), 'close' once the last connection ends, and
// http's request handling, timeouts and closeIdleConnections(). They work because the listening
// socket is handed to the server as its handle (listen-handle.ts), and connections are counted
// as net counts its own. The socket is its own (listen-socket.ts), a given fd (systemd's, a
// predecessor's), or a node:cluster primary's (cluster-listen.ts). See docs/ring-socket.md.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { close, listen } from '../syscalls.js';
import type { Ring, BufferRing } from './ring.js';
import { askPrimary, clusterOfWorker, type ClusterHandle } from './cluster-listen.js';
import { codeError, listenArgs, type ListenRequest } from './listen-args.js';
import { ListenHandle, type ListenSource, type NetServerLike } from './listen-handle.js';
import { listenError, openListener } from './listen-socket.js';
import { sharedRing } from './thread-ring.js';
import { tlsAddressesFrom } from './tls-addresses.js';

export interface OnRingOptions {
  /** The Ring the server accepts and its connections receive and send on. Default: one Ring
   * per thread, shared by every server given none. */
  ring?: Ring;
  /** The buffer pool its connections receive into. Default: one of `bufferCount` buffers of
   * `bufferSize` bytes per server, freed once the server closed (docs/ring-socket.md says how
   * to size it). */
  bufferRing?: BufferRing;
  /** Default 4096 (a power of two, at most 32768). */
  bufferCount?: number;
  /** Default 4096 bytes. */
  bufferSize?: number;
}

/** What onRing takes: a net.Server (node:net's, node:http's, node:https', node:tls'), by the
 * members it has, so that the package's types need no @types/node; a request handler is no
 * server. */
export interface RingServable {
  listen(...args: never[]): unknown;
  close(callback?: (err?: Error) => void): unknown;
  address(): unknown;
  getConnections(callback: (error: Error | null, count: number) => void): unknown;
}

/** `server` (a net.Server, or a node:http, node:https or tls server: they are net.Servers)
 * with a listen() on a Ring; returns the same server. listen takes net.Server's arguments:
 * (port[, host][, backlog][, callback]), (path[, backlog][, callback]), or ({ port, host,
 * backlog, path, ipv6Only, reusePort, exclusive, readableAll, writableAll, fd, signal }[,
 * callback]). */
export function onRing<S extends RingServable>(server: S, options: OnRingOptions = {}): S {
  const target = server as unknown as NetServerLike;
  if (typeof target.listen !== 'function' || !('_connections' in target) || typeof target._emitCloseIfDrained !== 'function') {
    throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "server" argument must be a net.Server (node:net, node:http, node:https or node:tls)');
  }
  if (options === null || typeof options !== 'object') throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "options" argument must be of type object');
  let pool = options.bufferRing;
  let previous: ListenHandle | undefined;
  const releasing = new Set<ListenHandle>();
  // 'close' comes last, once the socket is given up too (its fd closed a loop turn after close()).
  const emitCloseIfDrained = target._emitCloseIfDrained;
  Object.defineProperty(target, '_emitCloseIfDrained', {
    configurable: true,
    writable: true,
    value: function (this: NetServerLike): void {
      if (releasing.size === 0) emitCloseIfDrained.call(this);
    },
  });
  if (typeof (target as { setSecureContext?: unknown }).setSecureContext === 'function') tlsAddresses(target);
  Object.defineProperty(target, 'listen', {
    configurable: true,
    writable: true,
    value: function listenOnRing(this: NetServerLike, ...args: unknown[]): unknown {
      const request = listenArgs(args);
      if (this._handle) throw codeError(Error, 'ERR_SERVER_ALREADY_LISTEN', 'Listen method has been called more than once without closing.');
      if (request.callback !== undefined) this.once('listening', request.callback);
      const ring = options.ring ?? sharedRing();
      if (pool === undefined) {
        // the server's own pool goes with it: freed once it closed and its last connection ended
        const own = ring.setupBufRing({ count: options.bufferCount ?? 4096, size: options.bufferSize ?? 4096 });
        pool = own;
        this.once('close', () => {
          pool = undefined;
          try {
            own.close();
          } catch { /* a RingSocket of it outlived the server: the Ring frees it at its close */ }
        });
      }
      const handle = new ListenHandle(this, ring, pool);
      const before = previous?.stopped === true && releasing.has(previous) ? previous.released : undefined;
      previous = handle;
      const originalClose = handle.close.bind(handle);
      handle.close = (callback) => {
        releasing.add(handle);
        originalClose(() => {
          releasing.delete(handle);
          callback?.();
          this._emitCloseIfDrained();
        });
      };
      this._handle = handle; // listening from now on, as net's; close() before the bind stops it
      if (request.signal !== undefined) closeOnAbort(this, request.signal);
      const opened = (source: ListenSource) => {
        if (this._handle !== handle) return source.release(); // closed meanwhile
        handle.start(source);
        if (request.path !== undefined) this._pipeName = request.path;
        process.nextTick(() => {
          if (this._handle === handle) this.emit('listening');
        });
      };
      const failed = (err: Error) => {
        if (this._handle === handle) this._handle = null;
        process.nextTick(() => this.emit('error', err));
      };
      const open = (req: ListenRequest) => {
        if (this._handle !== handle) return; // closed meanwhile
        const cluster = req.fd === undefined && !req.exclusive ? clusterOfWorker() : null;
        if (cluster !== null) {
          askPrimary(cluster, this, req, (err, primary) => {
            if (err !== null) return failed(err);
            try {
              opened(fromPrimary(this, handle, primary!, req));
            } catch (e) {
              primary!.close();
              failed(e as Error);
            }
          });
          return;
        }
        try {
          opened(req.fd !== undefined ? givenFd(req) : ownSocket(req));
        } catch (err) {
          failed(err as Error);
        }
      };
      // Bound now, as net binds in listen() (address() works at once); a host name is looked
      // up first, as net looks it up; after a close() of this server, once its socket is given
      // up (its port is free then).
      const go = () => {
        if (request.host !== undefined && request.host !== '' && !isIP(request.host)) {
          lookup(request.host).then((found) => open({ ...request, host: found.address }), failed);
        } else {
          open(request);
        }
      };
      if (before !== undefined) void before.then(go);
      else go();
      return this;
    },
  });
  return server;
}

/** A socket onRing opens itself: closed when given up; a path's file removed at close(), as
 * net removes it. */
function ownSocket(req: ListenRequest): ListenSource {
  const fd = openListener(req);
  const path = req.path !== undefined && req.path[0] !== '\0' ? req.path : undefined;
  return { fd, unixPath: req.path !== undefined, release: () => close(fd), ...(path !== undefined ? { unlinkPath: path } : {}) };
}

/** A listening socket given as an fd (inherited: systemd's LISTEN_FDS, or passed over
 * SCM_RIGHTS): listen(2) again, as net does (a bound socket starts listening; one that listens
 * takes the backlog), and closed when given up, as net closes it. */
function givenFd(req: ListenRequest): ListenSource {
  const fd = req.fd!;
  try {
    listen(fd, req.backlog);
  } catch (err) {
    throw listenError(err, `fd ${fd}`, { fd });
  }
  return { fd, unixPath: false, release: () => close(fd) };
}

/** The primary's socket (SCHED_NONE: its fd) or stand-in (SCHED_RR: connections handed in).
 * The cluster's own close() of it (a worker's disconnect()) closes the server, as it closes a
 * net.Server, and waits for its connections. */
function fromPrimary(server: NetServerLike, handle: ListenHandle, primary: ClusterHandle, req: ListenRequest): ListenSource {
  const giveUp = primary.close.bind(primary);
  primary.close = (callback?: () => void) => {
    if (server._handle === handle) server.close(() => callback?.());
    else giveUp(callback);
  };
  const fd = typeof primary.fd === 'number' ? primary.fd : -1;
  if (fd >= 0) {
    try {
      listen(fd, req.backlog); // never the handle's own listen(): libuv would accept on it beside the Ring
    } catch (err) {
      throw listenError(err, req.path ?? `${req.host ?? '::'}:${req.port ?? 0}`, { address: req.path ?? req.host, port: req.port });
    }
    return { fd, unixPath: req.path !== undefined, release: () => giveUp() };
  }
  primary.onconnection = (status, passed) => {
    if (status === 0 && passed !== undefined) handle.passed(passed);
  };
  return {
    fd: -1,
    unixPath: req.path !== undefined,
    release: () => giveUp(),
    ...(primary.getsockname ? { getsockname: (out: Record<string, unknown>) => primary.getsockname!(out) } : {}),
    ref: () => primary.ref?.(),
    unref: () => primary.unref?.(),
  };
}

/** listen({ signal }): an abort closes the server, as net's. */
function closeOnAbort(server: NetServerLike, signal: AbortSignal): void {
  const onAbort = () => server.close();
  if (signal.aborted) {
    process.nextTick(onAbort);
    return;
  }
  signal.addEventListener('abort', onAbort, { once: true });
  server.once('close', () => signal.removeEventListener('abort', onAbort));
}

/** A TLS server's sockets over RingSockets get the RingSockets' addresses (tls-addresses.ts)
 * before the server's own listeners run. */
function tlsAddresses(server: NetServerLike): void {
  server.prependListener('secureConnection', (socket) => tlsAddressesFrom(socket));
  server.prependListener('tlsClientError', (_err, socket) => tlsAddressesFrom(socket));
}
