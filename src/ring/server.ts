// A net.Server (node:http's, node:https', fastify's, or net.createServer's) listening on a
// Ring: `onRing(server)` gives the server a listen() whose accepts are io_uring ops and whose
// connections are RingSockets. Everything else stays the server's own: net.Server's close(),
// address(), getConnections(), ref()/unref(), 'close' once the last connection ends, and
// http's request handling, timeouts and closeIdleConnections(). They work because the listening
// socket is handed to the server as its handle, with the five calls net.Server makes of one
// (close, getsockname, ref, unref; fd), and connections are counted as net counts its own.
// See docs/ring-socket.md.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { getSystemErrorMap } from 'node:util';
import { bind, close, getsockname, listen, setsockopt, shutdown, socket } from '../syscalls.js';
import type { AddressInfo } from '../native.js';
import { Ring, RingClosedError, type BufferRing } from './ring.js';
import { RingSocketDuplex } from './duplex.js';

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

/** What onRing needs of a server: net.Server's members (the public ones and the few of its
 * own that net.Server reads back: `_handle`, `_connections`, `_emitCloseIfDrained`). */
interface NetServerLike {
  listen(...args: unknown[]): unknown;
  emit(event: string | symbol, ...args: unknown[]): boolean;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  _handle: unknown;
  _connections: number;
  _emitCloseIfDrained(): void;
  _pipeName?: string;
  _unref?: boolean;
  maxConnections?: number;
  allowHalfOpen?: boolean;
  pauseOnConnect?: boolean;
  noDelay?: boolean;
  keepAlive?: boolean;
}

const ACCEPTS_IN_FLIGHT = 4;
const DEFAULT_BACKLOG = 511;
let threadRing: Ring | undefined;

function sharedRing(): Ring {
  if (threadRing === undefined || threadRing.closed) threadRing = new Ring({ entries: 4096, cqEntries: 16384 });
  return threadRing;
}

function codeError(ctor: ErrorConstructor, code: string, message: string): Error {
  return Object.assign(new ctor(message), { code });
}

/** `server` (a net.Server, or a node:http, node:https or tls server: they are net.Servers)
 * with a listen() on a Ring; returns the same server. listen takes net.Server's arguments:
 * (port[, host][, backlog][, callback]), (path[, backlog][, callback]), or ({ port, host,
 * backlog, path, ipv6Only, fd }[, callback]). */
export function onRing<S extends object>(server: S, options: OnRingOptions = {}): S {
  const target = server as unknown as NetServerLike;
  if (typeof target.listen !== 'function' || !('_connections' in target) || typeof target._emitCloseIfDrained !== 'function') {
    throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "server" argument must be a net.Server (node:net, node:http, node:https or node:tls)');
  }
  if (options === null || typeof options !== 'object') throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "options" argument must be of type object');
  let pool = options.bufferRing;
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
      this._handle = handle; // listening from now on, as net's; close() before the bind stops it
      const opened = (fd: number) => {
        if (this._handle !== handle) return close(fd); // closed meanwhile
        handle.start(fd, request.path !== undefined);
        if (request.path !== undefined) this._pipeName = request.path;
        process.nextTick(() => this.emit('listening'));
      };
      const failed = (err: Error) => {
        if (this._handle === handle) this._handle = null;
        process.nextTick(() => this.emit('error', err));
      };
      // Bound now, as net binds in listen() (address() works at once); a host name is looked
      // up first, as net looks it up.
      if (request.host !== undefined && request.host !== '' && !isIP(request.host)) {
        lookup(request.host).then((found) => opened(openListener({ ...request, host: found.address })), failed);
      } else {
        try {
          opened(openListener(request));
        } catch (err) {
          failed(err as Error);
        }
      }
      return this;
    },
  });
  return server;
}

interface ListenRequest {
  port?: number;
  host?: string;
  path?: string;
  fd?: number;
  backlog: number;
  ipv6Only: boolean;
  callback?: (...args: unknown[]) => void;
}

function badPort(port: unknown): Error {
  return codeError(RangeError, 'ERR_SOCKET_BAD_PORT', `options.port should be >= 0 and < 65536. Received ${typeof port === 'string' ? `type string ('${port}')` : String(port)}.`);
}

function toPort(port: unknown): number {
  const n = typeof port === 'string' && /^\d+$/.test(port.trim()) ? Number(port) : port;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 65535) throw badPort(port);
  return n;
}

/** net.Server's listen arguments, checked as net checks them (a throw, not an 'error'). */
function listenArgs(args: unknown[]): ListenRequest {
  const callback = typeof args.at(-1) === 'function' ? (args.pop() as ListenRequest['callback']) : undefined;
  const [first, second, third] = args;
  const req: ListenRequest = { backlog: DEFAULT_BACKLOG, ipv6Only: false, callback };
  const backlogOf = (value: unknown) => {
    if (value === undefined || value === null) return;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw codeError(RangeError, 'ERR_OUT_OF_RANGE', `The value of "backlog" is out of range. It must be an integer >= 0. Received ${String(value)}`);
    req.backlog = value;
  };
  if (first !== null && typeof first === 'object') {
    const o = first as { port?: unknown; host?: unknown; path?: unknown; backlog?: unknown; ipv6Only?: unknown; fd?: unknown };
    backlogOf(o.backlog);
    req.ipv6Only = o.ipv6Only === true;
    if (typeof o.fd === 'number') req.fd = o.fd;
    else if (typeof o.path === 'string') req.path = o.path;
    else if (o.port !== undefined || o.host !== undefined || o.path === undefined) {
      req.port = o.port === undefined || o.port === null ? 0 : toPort(o.port);
      if (o.host !== undefined && typeof o.host !== 'string') throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "options.host" property must be of type string');
      req.host = o.host as string | undefined;
    } else {
      throw codeError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument 'options' must have the property "port" or "path". Received ${JSON.stringify(first)}`);
    }
    return req;
  }
  if (typeof first === 'string' && !/^\s*\d+\s*$/.test(first)) {
    req.path = first;
    backlogOf(second);
    return req;
  }
  req.port = first === undefined || first === null ? 0 : toPort(first);
  if (typeof second === 'string') {
    req.host = second;
    backlogOf(third);
  } else {
    backlogOf(second);
  }
  return req;
}

/** The errno error of a failed listen, as net words it (`listen EADDRINUSE: address already in
 * use 127.0.0.1:8080`), with code, errno, syscall, address and port. */
function listenError(err: unknown, where: string, extra: object): Error {
  const code = (err as { code?: string }).code;
  const errno = (err as { errno?: number }).errno;
  if (code === undefined || errno === undefined) return err as Error;
  const text = getSystemErrorMap().get(errno)?.[1] ?? code;
  return Object.assign(new Error(`listen ${code}: ${text} ${where}`), { code, errno, syscall: 'listen', ...extra });
}

/** The listening socket: bound and listening, SO_REUSEADDR as libuv sets it; the host numeric;
 * none: '::' (dual-stack) where IPv6 works, else '0.0.0.0'. */
function openListener(req: ListenRequest): number {
  if (req.fd !== undefined) return req.fd;
  if (req.path !== undefined) {
    const fd = socket('unix', 'stream');
    try {
      bind(fd, req.path);
      listen(fd, req.backlog);
    } catch (err) {
      close(fd);
      throw listenError(err, req.path, { address: req.path });
    }
    return fd;
  }
  const hosts = req.host === undefined || req.host === '' ? ['::', '0.0.0.0'] : [req.host];
  let failure: unknown;
  for (const host of hosts) {
    const family = isIP(host) === 6 ? 'inet6' : 'inet';
    let fd: number;
    try {
      fd = socket(family, 'stream');
    } catch (err) {
      failure = err; // no IPv6 here: the next host
      continue;
    }
    try {
      setsockopt(fd, 'SO_REUSEADDR', true);
      if (family === 'inet6') setsockopt(fd, 'IPV6_V6ONLY', req.ipv6Only);
      bind(fd, { host, port: req.port ?? 0 });
      listen(fd, req.backlog);
      return fd;
    } catch (err) {
      close(fd);
      failure = listenError(err, `${host}:${req.port ?? 0}`, { address: host, port: req.port ?? 0 });
      if (hosts.length === 1 || (err as { code?: string }).code === 'EADDRINUSE') break;
    }
  }
  throw failure;
}

/** Backoff for an accept that failed for want of fds (EMFILE, ENFILE) or memory: it would fail
 * again at once; 10 ms, doubling to 1 s while it keeps failing. */
const nextPause = (ms: number) => (ms < 10 ? 10 : Math.min(ms * 2, 1000));
const RESOURCE_ERRORS = new Set(['EMFILE', 'ENFILE', 'ENOBUFS', 'ENOMEM']);
const PASSING_ERRORS = new Set(['ECONNABORTED', 'EPROTO', 'EPERM', 'EINTR', 'ETIMEDOUT', 'ENETDOWN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPROTONOSUPPORT', 'ENONET', 'EOPNOTSUPP']);

/** What net.Server holds as its `_handle`: the listening socket and its accept loops. */
class ListenHandle {
  fd = -1;
  readonly #server: NetServerLike;
  readonly #ring: Ring;
  readonly #pool: BufferRing;
  #stopped = false;
  #accepts = new AbortController(); // aborted to stop, or to re-arm the accepts weak or not
  #weak = false;
  #loops: Promise<void>[] = [];
  #waiting: (() => void) | undefined; // a backoff pause's wake-up
  /** Accepts that failed for want of fds and were retried (the server never stops on them). */
  retries = 0;

  constructor(server: NetServerLike, ring: Ring, pool: BufferRing) {
    this.#server = server;
    this.#ring = ring;
    this.#pool = pool;
    this.#weak = server._unref === true;
  }

  start(fd: number, unixPath: boolean): void {
    this.fd = fd;
    // net.Server's address() gives a path server's name from _pipeName, as a pipe handle has no
    // getsockname
    if (unixPath) Object.defineProperty(this, 'getsockname', { value: undefined });
    this.#loops = Array.from({ length: ACCEPTS_IN_FLIGHT }, () => this.#acceptLoop());
  }

  async #acceptLoop(): Promise<void> {
    let pauseMs = 0;
    while (!this.#stopped) {
      const signal = this.#accepts.signal;
      let fd: number;
      try {
        fd = await this.#ring.accept(this.fd, { signal, ref: !this.#weak });
        pauseMs = 0;
      } catch (err) {
        if (this.#stopped) return;
        const code = (err as { code?: string }).code ?? '';
        if (signal.aborted && code === 'ABORT_ERR') continue; // re-armed after ref()/unref()
        if (err instanceof RingClosedError) return this.#fail(err);
        if (PASSING_ERRORS.has(code)) continue;
        if (!RESOURCE_ERRORS.has(code)) return this.#fail(err as Error);
        this.retries++;
        pauseMs = nextPause(pauseMs);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pauseMs);
          if (this.#weak) timer.unref();
          this.#waiting = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        continue;
      }
      if (this.#stopped) close(fd);
      else this.#connection(fd);
    }
  }

  // As net's onconnection: over maxConnections the fd is closed and 'drop' emitted; else a
  // socket counted in _connections until it closes.
  #connection(fd: number): void {
    const server = this.#server;
    if (server.maxConnections !== undefined && server.maxConnections !== null && server._connections >= server.maxConnections) {
      const local = nameOr(fd, getsockname);
      close(fd);
      server.emit('drop', { localAddress: local?.address, localPort: local?.port, localFamily: local?.family });
      return;
    }
    let socket: RingSocketDuplex;
    try {
      socket = new RingSocketDuplex(this.#ring, fd, { bufferRing: this.#pool, allowHalfOpen: server.allowHalfOpen === true });
    } catch (err) {
      close(fd);
      this.#fail(err as Error);
      return;
    }
    server._connections++;
    socket.server = server;
    socket.once('close', () => {
      server._connections--;
      server._emitCloseIfDrained();
    });
    if (server.noDelay) socket.setNoDelay(true);
    if (server.keepAlive) socket.setKeepAlive(true);
    if (server.pauseOnConnect) socket.pause();
    server.emit('connection', socket);
  }

  // An accept error that is not the peer's nor a want of fds: the server stops listening and
  // says so ('error'), as net's does for an error of its handle.
  #fail(err: Error): void {
    if (this.#stopped) return;
    this.close();
    if (this.#server._handle === this) this.#server._handle = null;
    this.#server.emit('error', err);
    this.#server._emitCloseIfDrained();
  }

  // ---- the calls net.Server makes of its handle ----

  close(callback?: () => void): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#accepts.abort();
    this.#waiting?.();
    const fd = this.fd;
    // Not listening from now on: connections that come are refused, as after net's close(); the
    // fd itself closes once no accept of it is in the kernel (a number closed under an op could
    // be reused by another file meanwhile).
    if (fd >= 0) {
      try {
        shutdown(fd, 'both');
      } catch { /* not connected or listening: nothing to stop */ }
    }
    void Promise.allSettled(this.#loops).then(() => {
      if (fd >= 0) close(fd);
      callback?.();
    });
  }

  getsockname(out: Record<string, unknown>): number {
    if (this.fd < 0) return -9; // EBADF: not bound yet, as a handle that is not
    const name = getsockname(this.fd);
    if (typeof name === 'object') Object.assign(out, name);
    return 0;
  }

  ref(): void {
    this.#setWeak(false);
  }

  unref(): void {
    this.#setWeak(true);
  }

  #setWeak(weak: boolean): void {
    if (this.#weak === weak || this.#stopped) return;
    this.#weak = weak;
    // the accepts in flight are cancelled and armed again with the new `ref`
    const old = this.#accepts;
    this.#accepts = new AbortController();
    old.abort();
  }
}

function nameOr(fd: number, get: (fd: number) => string | AddressInfo): AddressInfo | undefined {
  try {
    const name = get(fd);
    return typeof name === 'object' ? name : undefined;
  } catch {
    return undefined;
  }
}
