// One generation of `iolab handoff`: an http server on a listening socket it opened (the first)
// or was handed (its successors), and on SIGHUP the restart with no request lost: it starts its
// successor with a Unix socket as the successor's fd 3, sends the listening socket over it
// (sendmsg, SCM_RIGHTS), and once the successor says it listens, stops accepting and drains.
// The successor is no child to wait for: it outlives this process, as nginx's new master
// outlives the old one; it gets no parent-death signal.
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { isIP } from 'node:net';
import { UserError } from '../cli-util.js';
import { interruptedBy, interruption, markInterrupted } from '../interrupt.js';
import { bind, close, getsockname, listen, recvmsg, sendmsg, setsockopt, socket, socketpair } from '../syscalls.js';
import { onRing } from '../ring/server.js';
import { listenError } from '../ring/listen-socket.js';
import { iolabArgv } from '../spawn-iolab.js';

export type HandoffServer = 'ring' | 'node';

export interface HandoffOptions {
  host: string;
  port: number;
  server: HandoffServer;
  /** Once it handed over, when the connections still idle are closed (ms). */
  drainMs: number;
  /** Take the listening socket from fd 3 (a Unix socket its predecessor sends it over). */
  takeOver: boolean;
  /** Events as JSON lines (passed on to the successor). */
  json: boolean;
}

export type HandoffEvent =
  | { event: 'serving'; pid: number; address: string; port: number; server: HandoffServer; from?: number }
  | { event: 'handed-over'; pid: number; to: number; connections: number }
  | { event: 'successor-failed'; pid: number; successor?: number; reason: string }
  | { event: 'exited'; pid: number; requests: number }
  | { event: 'stopped'; pid: number; requests: number; signal: string; partial: true };

/** The fd the successor reads the listening socket from (as systemd's first socket). */
const HANDOFF_FD = 3;

/** A listening TCP socket on host:port (SO_REUSEADDR, as node's), one `iolab:` line if not. */
function openListening(host: string, port: number): number {
  const fd = socket(isIP(host) === 6 ? 'inet6' : 'inet', 'stream');
  try {
    setsockopt(fd, 'SO_REUSEADDR', true);
    bind(fd, { host, port });
    listen(fd);
    return fd;
  } catch (err) {
    close(fd);
    throw new UserError(listenError(err, `${host}:${port}`, {}).message);
  }
}

/** The listening socket the predecessor sends over fd 3, and its pid. */
function takeListening(): { fd: number; from: number } {
  const text = Buffer.alloc(64);
  let got;
  try {
    got = recvmsg(HANDOFF_FD, [text], { maxFds: 1 });
  } catch (err) {
    throw new UserError(`--take-over: fd ${HANDOFF_FD} is not the Unix socket a predecessor sends the listening socket over (${(err as Error).message}); iolab handoff starts its successor with it`);
  }
  const fd = got.fds[0];
  if (fd === undefined) throw new UserError(`--take-over: the predecessor sent no listening socket over fd ${HANDOFF_FD}`);
  return { fd, from: Number(text.toString('utf8', 0, got.bytesRead)) || 0 };
}

/** Runs one generation until it handed over and drained (exit 0) or was stopped (130). */
export async function runHandoffServer(o: HandoffOptions, report: (e: HandoffEvent) => void): Promise<void> {
  const pid = process.pid;
  const { fd, from } = o.takeOver ? takeListening() : { fd: openListening(o.host, o.port), from: undefined };
  let requests = 0;
  let draining = false;
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    requests++;
    // while draining, each answer ends its connection: the client's next request goes to a
    // new connection, which the successor accepts
    if (draining) res.setHeader('Connection', 'close');
    res.end(`hello from pid ${pid}\n`);
  };
  const server = o.server === 'ring' ? onRing(http.createServer(handler)) : http.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ fd }, () => resolve());
  });
  const name = getsockname(fd);
  const { address, port } = typeof name === 'object' ? name : { address: String(name), port: 0 };
  report({ event: 'serving', pid, address, port, server: o.server, ...(from ? { from } : {}) });
  if (o.takeOver) {
    sendmsg(HANDOFF_FD, [Buffer.from('listening')]);
    close(HANDOFF_FD);
  }

  let handingOver = false;
  const drained = new Promise<'handed-over' | NodeJS.Signals>((resolve) => {
    process.on('SIGHUP', () => {
      if (handingOver || draining) return;
      handingOver = true;
      handOver(fd, o, report).then((to) => {
        handingOver = false;
        if (to === undefined) return; // still serving
        draining = true;
        server.getConnections((_err, connections) => report({ event: 'handed-over', pid, to, connections }));
        // net.Server's close: stops accepting and waits for the connections; http's own close()
        // would first close the idle ones, cutting a connection whose next request is on its way
        net.Server.prototype.close.call(server, () => resolve('handed-over'));
        const idle = setTimeout(() => server.closeIdleConnections(), o.drainMs);
        idle.unref();
      });
    });
    // Ctrl-C or SIGTERM: stop accepting, close idle connections at once and busy ones after
    // --drain (a second signal ends the process at once)
    interruption().addEventListener('abort', () => {
      server.close(() => resolve(interruptedBy() ?? 'SIGTERM'));
      server.closeIdleConnections();
      setTimeout(() => server.closeAllConnections(), o.drainMs).unref();
    }, { once: true });
  });
  const end = await drained;
  if (end === 'handed-over') {
    report({ event: 'exited', pid, requests });
  } else {
    report({ event: 'stopped', pid, requests, signal: end, partial: true });
    markInterrupted();
  }
}

/** Starts the successor with a Unix socket as its fd 3, sends it the listening socket, and
 * resolves with its pid once it listens; undefined (said in one event) when it did not. */
async function handOver(fd: number, o: HandoffOptions, report: (e: HandoffEvent) => void): Promise<number | undefined> {
  const [mine, theirs] = socketpair('stream');
  const args = ['handoff', '--take-over', '--server', o.server, '--drain', `${o.drainMs}ms`, ...(o.json ? ['--json'] : [])];
  const [file, argv] = iolabArgv(args);
  const successor = spawn(file, argv, { stdio: ['ignore', 'inherit', 'inherit', theirs] });
  close(theirs);
  const failed = (reason: string) => {
    report({ event: 'successor-failed', pid: process.pid, ...(successor.pid ? { successor: successor.pid } : {}), reason });
    return undefined;
  };
  if (successor.pid === undefined) {
    close(mine);
    return new Promise((resolve) => successor.once('error', (err) => resolve(failed(err.message))));
  }
  try {
    sendmsg(mine, [Buffer.from(String(process.pid))], { fds: [fd] });
  } catch (err) {
    close(mine);
    successor.kill();
    return failed((err as Error).message);
  }
  // its word that it listens, or its end
  const channel = new net.Socket({ fd: mine, readable: true, writable: false });
  return new Promise((resolve) => {
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => finish(`it exited (${signal ?? `status ${code}`}) before it listened`);
    let done = false;
    const finish = (reason?: string) => {
      if (done) return;
      done = true;
      successor.removeListener('exit', onExit);
      channel.destroy();
      resolve(reason === undefined ? successor.pid : failed(reason));
    };
    channel.once('data', () => finish());
    channel.once('error', (err) => finish(err.message));
    channel.once('end', () => finish('it closed the handoff socket before it listened'));
    successor.once('exit', onExit);
    successor.unref(); // it outlives this process
  });
}
