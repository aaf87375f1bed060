// The listening socket onRing opens itself (not a cluster's nor a given fd): bound and listening
// as libuv makes one for net (SO_REUSEADDR; SO_REUSEPORT when asked; '::' dual-stack where IPv6
// works, else '0.0.0.0'), a Unix path made readable or writable by all as net makes it, and
// errors worded as net's.
import { chmodSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { getSystemErrorMap } from 'node:util';
import { bind, close, listen, setsockopt, socket } from '../syscalls.js';
import type { ListenRequest } from './listen-args.js';

/** The errno error of a failed listen, as net words it (`listen EADDRINUSE: address already in
 * use 127.0.0.1:8080`), with code, errno, syscall, address and port. */
export function listenError(err: unknown, where: string, extra: object, syscall = 'listen'): Error {
  const code = (err as { code?: string }).code;
  const errno = (err as { errno?: number }).errno;
  if (code === undefined || errno === undefined) return err as Error;
  const text = getSystemErrorMap().get(errno)?.[1] ?? code;
  return Object.assign(new Error(`${syscall} ${code}: ${text} ${where}`), { code, errno, syscall, ...extra });
}

/** Whether this Node's libuv sets a Unix socket's mode to exactly what readableAll/writableAll
 * ask (1.51 on: Node 22.23's, 24's, 26's: 0o444, 0o222, 0o666) rather than adding it to the mode
 * the umask left (before: Node 20's 0o755, 0o777, 0o777). */
const exactPipeModes = (() => {
  const [major, minor] = process.versions.uv.split('.').map(Number);
  return major > 1 || (major === 1 && minor >= 51);
})();

/** A Unix socket bound at req.path and listening; readableAll/writableAll give the file the
 * mode net (libuv's uv_pipe_chmod) gives it on this Node. */
function openPath(req: ListenRequest & { path: string }): number {
  const fd = socket('unix', 'stream');
  try {
    bind(fd, req.path);
    listen(fd, req.backlog);
  } catch (err) {
    close(fd);
    throw listenError(err, req.path, { address: req.path });
  }
  const wanted = (req.readableAll ? 0o444 : 0) | (req.writableAll ? 0o222 : 0);
  if (wanted !== 0) {
    try {
      if (exactPipeModes) chmodSync(req.path, wanted);
      else {
        const { mode } = statSync(req.path);
        if ((mode & wanted) !== wanted) chmodSync(req.path, (mode | wanted) & 0o7777);
      }
    } catch (err) {
      close(fd);
      throw err;
    }
  }
  return fd;
}

/** The listening socket of `req` (a port or a path; the host numeric). */
export function openListener(req: ListenRequest): number {
  if (req.path !== undefined) return openPath(req as ListenRequest & { path: string });
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
      if (req.reusePort) setsockopt(fd, 'SO_REUSEPORT', true);
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
