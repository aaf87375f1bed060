// Shared by the echo tests: start a CLI echo server on a free port, and node:net clients.
import { connect, type Socket } from 'node:net';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { cpuTicks } from '../../src/procfs.js';
import { startCli } from './cli.js';
import { waitFor as pollUntil } from './procs.js';

export async function startEchoServerCli(server: string, extra: string[] = []) {
  const { child, firstLine } = await startCli(['echo', 'server', '--server', server, '--port', '0', ...extra], /listening/);
  const port = Number((/"port":(\d+)/.exec(firstLine) ?? /:(\d+) /.exec(firstLine))![1]); // --json or text
  return { child, port, firstLine };
}

export function fdCountOf(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

export function connectTo(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, noDelay: true }, () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** Sends payload (in the given chunks) and resolves with everything echoed once `want` bytes came. */
export function echoOnce(s: Socket, chunks: Buffer[], want: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const got: Buffer[] = [];
    let n = 0;
    // Every listener goes when the echo settles: one socket serves many rounds.
    const settle = (err?: Error) => {
      s.off('data', onData).off('error', onError).off('close', onClose);
      if (err) reject(err);
      else resolve(Buffer.concat(got));
    };
    const onData = (d: Buffer) => {
      got.push(d);
      n += d.length;
      if (n >= want) settle();
    };
    const onError = (e: Error) => settle(e);
    const onClose = () => settle(new Error(`closed after ${n} of ${want} bytes`));
    s.on('data', onData).on('error', onError).on('close', onClose);
    for (const c of chunks) s.write(c);
  });
}

/** Resolves when the socket has closed (after the peer's FIN or our destroy). */
export function closed(s: Socket): Promise<void> {
  return new Promise((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));
}

/** Polls until fn() is true (or throws after timeoutMs): procs.ts's waitFor, condition first. */
export async function waitFor(fn: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  await pollUntil(what, fn, timeoutMs);
}

/** CPU time a process has used, in clock ticks (src/procfs.ts); throws once it is gone, where
 * a dead server's CPU would otherwise read as 0 %. */
export function processCpuTicks(pid: number): number {
  const ticks = cpuTicks(pid);
  if (ticks === undefined) throw new Error(`process ${pid} is gone`);
  return ticks;
}

/** Resolves with the ms from now until the child process exits. */
export function msUntilExit(child: { once(event: 'exit', fn: () => void): unknown; exitCode: number | null }): Promise<number> {
  const t0 = performance.now();
  if (child.exitCode !== null) return Promise.resolve(0);
  return new Promise((resolve) => child.once('exit', () => resolve(performance.now() - t0)));
}

/** Sockets among a process's fds (listening and connected alike). */
export function socketCountOf(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

/** TCP connections established to a local port (accepted or still in the listen backlog), from
 * /proc/net/tcp and tcp6: the clients' view of "connected", whatever the server is doing. */
export function establishedTo(port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  let n = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 3 && f[1].endsWith(`:${hexPort}`) && f[3] === '01') n++;
    }
  }
  return n;
}
