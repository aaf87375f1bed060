// onRing in a node:cluster worker (pm2's cluster mode is one): the listening socket comes from
// the primary, asked as net.Server asks it (cluster's _getServer, with the query net sends, so
// that onRing's and node's servers of one port share the primary's socket). What comes back is
// either the socket itself (SCHED_NONE: a TCP or pipe handle whose fd the Ring accepts on), or
// a stand-in (SCHED_RR, the default but on Windows: the primary accepts, and hands each
// connection to a worker as a TCP or pipe handle, which onRing serves as a RingSocket).
import { createRequire } from 'node:module';
import { getSystemErrorName } from 'node:util';
import type { ListenRequest } from './listen-args.js';

/** A connection's handle as the primary sends it (SCHED_RR): its fd, and close(). */
export interface PassedHandle {
  readonly fd: number;
  close(callback?: () => void): void;
}

/** What the primary gives a worker: a real listening handle (fd >= 0) or the stand-in. */
export interface ClusterHandle {
  readonly fd?: number;
  close(callback?: () => void): void;
  getsockname?(out: Record<string, unknown>): number;
  ref?(): void;
  unref?(): void;
  onconnection?: (status: number, handle?: PassedHandle) => void;
}

interface WorkerCluster {
  isWorker: boolean;
  _getServer?: (server: object, query: object, callback: (errno: number | null, handle: ClusterHandle | null) => void) => void;
}

const UV_TCP_IPV6ONLY = 1; // tcp_wrap's constant: the flag net sends for ipv6Only

let workerCluster: WorkerCluster | null | undefined;

/** node:cluster when this process is one of its workers (loaded on the first listen: net
 * loads it then too), else null. */
export function clusterOfWorker(): WorkerCluster | null {
  if (workerCluster === undefined) {
    const cluster = createRequire(import.meta.url)('node:cluster') as WorkerCluster;
    workerCluster = cluster.isWorker && typeof cluster._getServer === 'function' ? cluster : null;
  }
  return workerCluster;
}

/** As net's ExceptionWithHostPort: `bind EADDRINUSE 127.0.0.1:8080`. */
function bindError(errno: number, address: string | null, port: number): Error {
  const code = getSystemErrorName(errno);
  const details = port > 0 ? ` ${address}:${port}` : address ? ` ${address}` : '';
  return Object.assign(new Error(`bind ${code}${details}`), { errno, code, syscall: 'bind', address, ...(port > 0 ? { port } : {}) });
}

/** Asks the primary for the socket of `req` (the host numeric), as net.Server does; calls back
 * with the handle, or the error net would emit. */
export function askPrimary(cluster: WorkerCluster, server: object, req: ListenRequest, callback: (err: Error | null, handle?: ClusterHandle) => void): void {
  const path = req.path !== undefined;
  const address = path ? req.path! : req.host === undefined || req.host === '' ? null : req.host;
  const port = path ? -1 : req.port ?? 0;
  const addressType = path ? -1 : address === null || !address.includes(':') ? 4 : 6;
  const query: Record<string, unknown> = { address, port, addressType, fd: undefined, flags: req.ipv6Only ? UV_TCP_IPV6ONLY : 0, backlog: req.backlog };
  if (path) Object.assign(query, { readableAll: req.readableAll, writableAll: req.writableAll });
  cluster._getServer!(server, query, (errno, handle) => {
    let err = errno ?? 0;
    // as net: a port taken after the primary's bind shows as another port bound
    if (err === 0 && port > 0 && handle?.getsockname) {
      const out: Record<string, unknown> = {};
      err = handle.getsockname(out);
      if (err === 0 && out.port !== port) err = -98; // UV_EADDRINUSE
    }
    if (err !== 0 || handle === null) callback(bindError(err || -22, address, port));
    else callback(null, handle);
  });
}
