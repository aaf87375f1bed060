// What onRing's server holds as net.Server's `_handle`: the listening socket and the Ring's
// accepts of it, or (in a node:cluster worker under SCHED_RR) the primary's stand-in that hands
// connections in. net.Server calls five things of it (close, getsockname, ref, unref; fd), and
// each connection becomes a RingSocket counted as net counts its own.
import { unlinkSync } from 'node:fs';
import { close, getpeername, getsockname } from '../syscalls.js';
import type { AddressInfo } from '../native.js';
import { RingClosedError, type BufferRing, type Ring } from './ring.js';
import { RingSocketDuplex } from './duplex.js';
import type { PassedHandle } from './cluster-listen.js';

/** What onRing needs of a server: net.Server's members (the public ones and the few of its
 * own that net.Server reads back: `_handle`, `_connections`, `_emitCloseIfDrained`). */
export interface NetServerLike {
  listen(...args: unknown[]): unknown;
  close(callback?: (err?: Error) => void): unknown;
  emit(event: string | symbol, ...args: unknown[]): boolean;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  prependListener(event: string, listener: (...args: unknown[]) => void): unknown;
  _handle: unknown;
  _connections: number;
  _emitCloseIfDrained(): void;
  _pipeName?: string;
  _unref?: boolean;
  maxConnections?: number | null;
  allowHalfOpen?: boolean;
  pauseOnConnect?: boolean;
  noDelay?: boolean;
  keepAlive?: boolean;
}

/** Where the connections come from, and how the socket is given up. */
export interface ListenSource {
  /** The listening socket the Ring accepts on; -1 where the connections are handed in. */
  fd: number;
  /** Gives the socket up (closes the fd, or tells the cluster's primary): called once no accept
   * of it is in the kernel. */
  release(): void;
  /** The address, where it is not the fd's (the cluster's stand-in). */
  getsockname?(out: Record<string, unknown>): number;
  /** A path server: address() is its path (net's _pipeName), not a getsockname. */
  unixPath: boolean;
  /** The socket file to remove at close(), as net removes the file of a path it bound. */
  unlinkPath?: string;
  /** Keeping the process alive, where the source does it (the cluster's stand-in). */
  ref?(): void;
  unref?(): void;
}

const ACCEPTS_IN_FLIGHT = 4;

/** Backoff for an accept that failed for want of fds (EMFILE, ENFILE) or memory: it would fail
 * again at once; 10 ms, doubling to 1 s while it keeps failing. */
const nextPause = (ms: number) => (ms < 10 ? 10 : Math.min(ms * 2, 1000));
const RESOURCE_ERRORS = new Set(['EMFILE', 'ENFILE', 'ENOBUFS', 'ENOMEM']);
const PASSING_ERRORS = new Set(['ECONNABORTED', 'EPROTO', 'EPERM', 'EINTR', 'ETIMEDOUT', 'ENETDOWN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPROTONOSUPPORT', 'ENONET', 'EOPNOTSUPP']);

export class ListenHandle {
  fd = -1;
  readonly #server: NetServerLike;
  readonly #ring: Ring;
  readonly #pool: BufferRing;
  #source: ListenSource | undefined;
  #stopped = false;
  #accepts = new AbortController(); // aborted to stop, or to re-arm the accepts weak or not
  #weak = false;
  #loops: Promise<void>[] = [];
  readonly #waiting = new Set<() => void>(); // the wake-ups of the loops in a backoff pause
  /** Settles once the socket is given up (after close()). */
  released: Promise<void> | undefined;

  constructor(server: NetServerLike, ring: Ring, pool: BufferRing) {
    this.#server = server;
    this.#ring = ring;
    this.#pool = pool;
    this.#weak = server._unref === true;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  start(source: ListenSource): void {
    this.#source = source;
    this.fd = source.fd;
    // net.Server's address() gives a path server's name from _pipeName, as a pipe handle has no
    // getsockname
    if (source.unixPath) Object.defineProperty(this, 'getsockname', { value: undefined });
    if (this.#weak) source.unref?.();
    if (source.fd >= 0) this.#loops = Array.from({ length: ACCEPTS_IN_FLIGHT }, () => this.#acceptLoop(source.fd));
  }

  async #acceptLoop(listening: number): Promise<void> {
    let pauseMs = 0;
    while (!this.#stopped) {
      const signal = this.#accepts.signal;
      let fd: number;
      try {
        fd = await this.#ring.accept(listening, { signal, ref: !this.#weak });
        pauseMs = 0;
      } catch (err) {
        if (this.#stopped) return;
        const code = (err as { code?: string }).code ?? '';
        if (signal.aborted && code === 'ABORT_ERR') continue; // re-armed after ref()/unref()
        if (err instanceof RingClosedError) return this.#fail(err);
        if (PASSING_ERRORS.has(code)) continue;
        if (!RESOURCE_ERRORS.has(code)) return this.#fail(err as Error);
        pauseMs = nextPause(pauseMs);
        await new Promise<void>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            this.#waiting.delete(wake);
            resolve();
          };
          const timer = setTimeout(wake, pauseMs);
          if (this.#weak) timer.unref();
          this.#waiting.add(wake);
        });
        continue;
      }
      // Served also when close() came meanwhile: the kernel had taken the connection off the
      // socket's queue before the accept was cancelled, and a socket shared with another
      // process would have given it to that one otherwise.
      this.#serve(fd);
    }
  }

  /** A connection the cluster's primary handed in (SCHED_RR): served on the handle's fd, which
   * the handle keeps and closes once the RingSocket is done with it. */
  passed(handle: PassedHandle): void {
    if (this.#stopped) return handle.close();
    this.#serve(handle.fd, handle);
  }

  // As net's onconnection: over maxConnections the connection is closed and 'drop' emitted;
  // else a socket counted in _connections until it closes.
  #serve(fd: number, handle?: PassedHandle): void {
    const server = this.#server;
    const drop = () => (handle ? handle.close() : close(fd));
    if (server.maxConnections !== undefined && server.maxConnections !== null && server._connections >= server.maxConnections) {
      const local = nameOr(fd, getsockname);
      const remote = nameOr(fd, getpeername);
      drop();
      server.emit('drop', {
        localAddress: local?.address, localPort: local?.port, localFamily: local?.family,
        remoteAddress: remote?.address, remotePort: remote?.port, remoteFamily: remote?.family,
      });
      return;
    }
    let socket: RingSocketDuplex;
    try {
      socket = new RingSocketDuplex(this.#ring, fd, { bufferRing: this.#pool, allowHalfOpen: server.allowHalfOpen === true, closeFd: handle === undefined });
    } catch (err) {
      drop();
      this.#fail(err as Error);
      return;
    }
    server._connections++;
    socket.server = server;
    socket.once('close', () => {
      handle?.close();
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

  /** Stops accepting at once (the Ring's accepts of the socket cancelled), and gives the socket
   * up once the kernel holds none of them: its fd is closed (a number closed under an op could
   * be reused by another file meanwhile), never shut down, since another process may share the
   * socket (a cluster, a restart that handed it over): their accepts go on. */
  close(callback?: () => void): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#accepts.abort();
    try {
      this.#ring.submit(); // the cancels reach the kernel now, not at the loop's next turn
    } catch { /* the Ring is closed: its ops are cancelled already */ }
    for (const wake of [...this.#waiting]) wake(); // every loop in a pause, not only the last to pause
    const source = this.#source;
    if (source?.unlinkPath !== undefined) {
      try {
        unlinkSync(source.unlinkPath);
      } catch { /* removed already */ }
    }
    this.released = Promise.allSettled(this.#loops).then(() => {
      source?.release();
      callback?.();
    });
  }

  getsockname(out: Record<string, unknown>): number {
    if (this.#source?.getsockname) return this.#source.getsockname(out);
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
    if (weak) this.#source?.unref?.();
    else this.#source?.ref?.();
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
