// net.Server.listen()'s arguments as onRing takes them: the forms net takes, checked as net checks
// them (a throw, not an 'error'), read once into one plain request.
import { received } from './op-options.js';

export interface ListenRequest {
  port?: number;
  host?: string;
  path?: string;
  fd?: number;
  backlog: number;
  ipv6Only: boolean;
  /** SO_REUSEPORT: every process listening on the port with it gets its own socket, and the
   * kernel spreads connections over them (net's option since Node 22.12 and 23.1). */
  reusePort: boolean;
  /** In a node:cluster worker: a socket of its own, not the primary's. */
  exclusive: boolean;
  readableAll: boolean;
  writableAll: boolean;
  signal?: AbortSignal;
  callback?: (...args: unknown[]) => void;
}

export const DEFAULT_BACKLOG = 511;
/** A backlog listen(2) caps at the kernel's somaxconn: what it does with net's negative one. */
const SOMAXCONN_ANY = 0x7fffffff;

/** net's toNumber: the value as a number when that is >= 0, else false. */
const nonNegative = (value: unknown): number | false => {
  const n = Number(value);
  return n >= 0 ? n : false;
};

export function codeError(ctor: ErrorConstructor, code: string, message: string): Error {
  return Object.assign(new ctor(message), { code });
}

function badPort(port: unknown): Error {
  return codeError(RangeError, 'ERR_SOCKET_BAD_PORT', `options.port should be >= 0 and < 65536. Received ${typeof port === 'string' ? `type string ('${port}')` : String(port)}.`);
}

function toPort(port: unknown): number {
  const n = typeof port === 'string' && /^\d+$/.test(port.trim()) ? Number(port) : port;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 65535) throw badPort(port);
  return n;
}

interface ListenOptions {
  port?: unknown; host?: unknown; path?: unknown; backlog?: unknown; ipv6Only?: unknown; fd?: unknown;
  reusePort?: unknown; exclusive?: unknown; readableAll?: unknown; writableAll?: unknown; signal?: unknown;
}

/** net.Server's listen arguments: (port[, host][, backlog][, cb]), (path[, backlog][, cb]) or
 * (options[, cb]). */
export function listenArgs(args: unknown[]): ListenRequest {
  const callback = typeof args.at(-1) === 'function' ? (args.pop() as ListenRequest['callback']) : undefined;
  const [first, second, third] = args;
  const req: ListenRequest = { backlog: DEFAULT_BACKLOG, ipv6Only: false, reusePort: false, exclusive: false, readableAll: false, writableAll: false, callback };
  // The backlog as net reads it: the first non-negative number among the second and third
  // arguments, else the options' backlog; then net's `|| 511` and the int32 its handle's
  // listen() takes. So 0, a missing or a non-numeric backlog give 511; a negative one (after
  // int32) reaches listen(2) as net's does, which then takes the kernel's somaxconn.
  const positional = nonNegative(second) || nonNegative(third);
  const backlogOf = (option?: unknown): number => {
    const n = ((option || positional || DEFAULT_BACKLOG) as number) | 0;
    return n < 0 ? SOMAXCONN_ANY : n;
  };
  if (first !== null && typeof first === 'object') {
    const o = { ...(first as ListenOptions) }; // each option read once
    req.backlog = backlogOf(o.backlog);
    req.ipv6Only = o.ipv6Only === true;
    req.reusePort = o.reusePort === true;
    req.exclusive = o.exclusive === true || req.reusePort; // as net from Node 23.1: each worker its own socket
    if (o.signal !== undefined) {
      if (o.signal === null || typeof o.signal !== 'object' || !('aborted' in o.signal)) {
        throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', `The "options.signal" property must be an instance of AbortSignal. Received ${received(o.signal)}`);
      }
      req.signal = o.signal as AbortSignal;
    }
    if (typeof o.fd === 'number' && o.fd >= 0) {
      req.fd = o.fd;
    } else if (typeof o.path === 'string' && o.path !== '' && !('port' in o)) {
      req.path = o.path;
      req.readableAll = o.readableAll === true;
      req.writableAll = o.writableAll === true;
      if (req.path[0] === '\0' && (req.readableAll || req.writableAll)) {
        throw codeError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument 'options' can not set readableAll or writableAll to true when path is abstract unix socket. Received ${JSON.stringify(first)}`);
      }
    } else if (o.port !== undefined || o.host !== undefined || o.path === undefined) {
      req.port = o.port === undefined || o.port === null ? 0 : toPort(o.port);
      if (o.host !== undefined && o.host !== null && typeof o.host !== 'string') throw codeError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "options.host" property must be of type string');
      req.host = (o.host ?? undefined) as string | undefined;
    } else {
      throw codeError(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument 'options' must have the property "port" or "path". Received ${JSON.stringify(first)}`);
    }
    return req;
  }
  if (typeof first === 'string' && !/^\s*\d+\s*$/.test(first)) {
    req.path = first;
    req.backlog = backlogOf();
    return req;
  }
  req.port = first === undefined || first === null ? 0 : toPort(first);
  if (typeof second === 'string') req.host = second;
  req.backlog = backlogOf();
  return req;
}
