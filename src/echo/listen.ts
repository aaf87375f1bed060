// The listening TCP socket of the echo servers written in TypeScript, made with iolab's public
// API as a user of the package would (the C servers make theirs in native/echo/echo_net.c, the
// same steps).
import { isIP } from 'node:net';
import { bind, close, getsockname, listen, setsockopt, socket, type AddressInfo } from '../index.js';

/** A TCP socket bound to host (numeric) and port (0: any free one), listening, with
 * SO_REUSEADDR and TCP_NODELAY (which the sockets it accepts inherit). The fd belongs to the
 * caller; `port` is the one bound. */
export function listenTcp(host: string, port: number, backlog: number): { fd: number; port: number } {
  const fd = socket(isIP(host) === 6 ? 'inet6' : 'inet', 'stream');
  try {
    setsockopt(fd, 'SO_REUSEADDR', true);
    setsockopt(fd, 'TCP_NODELAY', true);
    bind(fd, { host, port });
    listen(fd, backlog);
    return { fd, port: (getsockname(fd) as AddressInfo).port };
  } catch (err) {
    close(fd);
    throw err;
  }
}
