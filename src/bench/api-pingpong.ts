// bench api's ping-pong group: one message in flight to a child process that sends it back, each
// round trip timed (p50 and p99 of a run; the rows print the medians of the rounds' own):
//   ring.pingpong     ring.recv (armed first) + ring.send on a socketpair to the child
//   net.pingpong      a node:net Socket on another socketpair to the same child
//   channel.pingpong  iolab's Channel (its public API) to the same child
//   c.pingpong        ring's exchange as a C loop off the JS thread (native/ipc/pingpong.c): the floor
// The child is one program for every row, `iolab bench api echo-peer`: each socket echoed by a C
// loop on a thread of its own (the same echo for the ring, net and C rows), the channel by
// Channel.join and a JS loop (a Channel's other side is JS by nature). It starts when the group
// does and ends with it, so it does not run beside the other groups. Each echo is checked (the
// sequence stamps and a page of bytes: api-messages.ts) after its time is taken.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { UserError } from '../cli-util.js';
import { formatBytes, formatCount, formatNs, median, percentile, table } from '../format.js';
import { Channel, close, socketpair } from '../index.js';
import { native } from '../native.js';
import { childEnv, dieWithParentIfAsked } from '../parent-death.js';
import { Ring } from '../ring/index.js';
import { iolabArgv } from '../spawn-iolab.js';
import { rowKey, type Contender, type Measured } from './api-loops.js';
import { checkMessage, messageBuffer, stamp } from './api-messages.js';

export const pingpongSizes = [64, 1024, 64 << 10];
export const pingpongContenderNames = ['c.pingpong', 'ring.pingpong', 'net.pingpong', 'channel.pingpong'];
/** p50 RTT ratios printed per size (lower is better): each JS row over the C floor, the Ring over net. */
const rttPairs: [string, string][] = [['ring.pingpong', 'c.pingpong'], ['net.pingpong', 'c.pingpong'],
  ['channel.pingpong', 'c.pingpong'], ['ring.pingpong', 'net.pingpong'], ['channel.pingpong', 'net.pingpong']];
/** The channel's round-trip goals, at most these ratios: level with node:net, and within 1.5x
 * the C loop over a socket. */
const rttGoals: Record<string, number> = { 'channel.pingpong/64 / net.pingpong/64': 1, 'channel.pingpong/64 / c.pingpong/64': 1.5 };

/** The peer's fds: the ring, net and C rows' sockets, then the channel's. */
const peerFds = { ring: 3, net: 4, c: 5, channel: 6 };

/** `iolab bench api echo-peer`: the child of the group (started by bench api itself). */
export function echoPeerCommand(): Command {
  return new Command('echo-peer')
    .description("the peer of bench api's ping-pong group: echoes fds 3-5 in C and the channel on fd 6 (started by bench api itself)")
    .action(async () => {
      dieWithParentIfAsked();
      process.on('SIGINT', () => {}); // a terminal's Ctrl-C reaches the group: bench api ends this process in order
      const echoes = [peerFds.ring, peerFds.net, peerFds.c].map((fd) => native.pingpongEcho(fd));
      const channel = await Channel.join(peerFds.channel);
      close(peerFds.channel);
      process.stdout.write('ready\n');
      for await (const view of channel) if (!channel.trySend(view)) await channel.send(view);
      await channel.close();
      await Promise.all(echoes);
    });
}

interface Peer {
  child: ChildProcess;
  /** This side's sockets of the ring, net and C rows (the net row's adopted by its net.Socket). */
  fds: { ring: number; net: number; c: number };
  channel: Channel;
  stop(): Promise<void>;
}

async function startPeer(): Promise<Peer> {
  const pairs = [socketpair('stream'), socketpair('stream'), socketpair('stream'), socketpair('stream')];
  const [file, argv] = iolabArgv(['bench', 'api', 'echo-peer']);
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe', ...pairs.map(([, theirs]) => theirs)], env: childEnv() });
  for (const [, theirs] of pairs) close(theirs);
  let said = '';
  child.stderr!.on('data', (d: Buffer) => (said += d.toString()));
  const exited = once(child, 'exit');
  const mine = pairs.map(([m]) => m);
  const fds = { ring: mine[0], net: mine[1], c: mine[2] };
  let channel: Channel | undefined;
  const stop = async () => {
    await channel?.close();
    if (mine[3] >= 0) close(mine[3]);
    for (const fd of Object.values(fds)) if (fd >= 0) close(fd);
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  };
  try {
    channel = await Channel.create(mine[3], { capacity: 1 << 20 });
    close(mine[3]);
    mine[3] = -1;
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => ((out += d.toString()).includes('ready\n') ? resolve() : undefined));
      void exited.then(([code, signal]) => reject(new UserError(`the ping-pong group's peer (pid ${child.pid}) ${signal ? `was killed by ${signal}` : `exited with ${code}`}` +
        `${said.trim() ? `: ${said.trim().split('\n').pop()}` : ''}`)));
      child.once('error', reject);
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { child, fds, channel, stop };
}

/** Round trips of `message` for durationMs (or exactly roundTrips), each timed around
 * exchange() and its echo checked after. */
async function timed(size: number, durationMs: number, roundTrips: number | undefined,
  exchange: (message: Buffer) => Promise<Uint8Array>): Promise<Measured> {
  const message = messageBuffer(size);
  const times: number[] = [];
  const start = performance.now();
  for (let n = 0; roundTrips !== undefined ? n < roundTrips : performance.now() - start < durationMs; n++) {
    stamp(message, n);
    const t0 = performance.now();
    const echo = await exchange(message);
    times.push((performance.now() - t0) * 1e6);
    const wrong = checkMessage(echo, n, size);
    if (wrong !== undefined) throw new UserError(`ping-pong at ${formatBytes(size)}: the echo of ${wrong}`);
  }
  return { ops: times.length, seconds: (performance.now() - start) / 1000, rtt: { p50Ns: percentile(times, 50), p99Ns: percentile(times, 99) } };
}

/** The group's rows, its peer started by start() and stopped by cleanup(). */
export function pingpongGroup(roundTrips: number | undefined): { list: Contender[]; start(): Promise<void>; cleanup(): Promise<void> } {
  let peer: Peer | undefined;
  let ring: Ring | undefined;
  let socket: net.Socket | undefined;
  // the net row's echo, gathered from 'data' into reply
  let reply = Buffer.alloc(0);
  let filled = 0;
  let arrived: ((err?: Error) => void) | undefined;
  const started = () => {
    if (!peer || !ring || !socket) throw new Error('the ping-pong group was not started');
    return { peer, ring, socket };
  };

  const exchanges: Record<string, (size: number) => (message: Buffer) => Promise<Uint8Array>> = {
    'ring.pingpong': (size) => {
      const { peer: p, ring: r } = started();
      const back = Buffer.alloc(size);
      return async (message) => {
        const first = r.recv(p.fds.ring, back); // armed before the send: the echo completes it
        try {
          for (let sent = 0; sent < size;) sent += await r.send(p.fds.ring, message.subarray(sent));
        } catch (err) {
          first.catch(() => {}); // the send's error is the one to report
          throw err;
        }
        let got = await first;
        while (got < size) {
          const n = await r.recv(p.fds.ring, back.subarray(got));
          if (n === 0) throw new UserError('ping-pong: the peer closed the ring row\'s socket');
          got += n;
        }
        return back;
      };
    },
    'net.pingpong': (size) => {
      const { socket: s } = started();
      reply = Buffer.alloc(size);
      return (message) => new Promise<Uint8Array>((resolve, reject) => {
        filled = 0;
        arrived = (err) => (err ? reject(err) : resolve(reply));
        s.write(message);
      });
    },
    'channel.pingpong': () => {
      const { peer: p } = started();
      return async (message) => {
        if (!p.channel.trySend(message)) await p.channel.send(message);
        const echo = await p.channel.receive();
        if (echo === null) throw new UserError('ping-pong: the peer closed the channel');
        return echo;
      };
    },
  };

  const list: Contender[] = [];
  for (const size of pingpongSizes) {
    for (const contender of pingpongContenderNames) {
      const run = contender === 'c.pingpong'
        ? async (ms: number): Promise<Measured> => {
          const r = await native.pingpongLoop(started().peer.fds.c, { messageBytes: size, durationMs: ms, roundTrips });
          return { ops: r.roundTrips, seconds: r.elapsedNs / 1e9, rtt: { p50Ns: r.p50Ns, p99Ns: r.p99Ns } };
        }
        : (ms: number) => timed(size, ms, roundTrips, exchanges[contender](size));
      list.push({ contender, inflight: 1, messageBytes: size, group: 'pingpong', run });
    }
  }
  return {
    list,
    async start() {
      peer = await startPeer();
      ring = new Ring({ entries: 64 });
      socket = new net.Socket({ fd: peer.fds.net, readable: true, writable: true });
      peer.fds.net = -1; // the socket's now: destroy() closes it
      socket.on('data', (chunk: Buffer) => {
        if (filled + chunk.length > reply.length) return arrived?.(new UserError('ping-pong: the net row\'s echo is longer than the message'));
        chunk.copy(reply, filled);
        filled += chunk.length;
        if (filled === reply.length) arrived?.();
      });
      socket.on('error', (err) => arrived?.(err));
    },
    async cleanup() {
      socket?.destroy();
      await ring?.close();
      await peer?.stop();
    },
  };
}

/** A pingpong row's figures: medians over the rounds of each round's p50 and p99, in us. */
export interface RttFigures {
  p50Us: number[];
  p99Us: number[];
}

interface PingpongRow {
  contender: string;
  inflight: number;
  messageBytes?: number;
  opsPerSec: number | null;
  jsCpuNsPerOp?: number;
  rttP50Us?: number;
  rttP99Us?: number;
}

export interface RttRatio {
  name: string;
  /** p50 RTT of `of` over `over`'s: lower is better. */
  ratio: number;
  /** The most the ratio may be. */
  goal?: number;
}

/** Per size, each JS row's p50 over the C floor's and the Ring's and the channel's over net's. */
export function rttRatios(rows: PingpongRow[]): RttRatio[] {
  const p50 = new Map(rows.map((r) => [rowKey(r), r.rttP50Us]));
  const out: RttRatio[] = [];
  for (const size of pingpongSizes) {
    for (const [a, b] of rttPairs) {
      const of = rowKey({ contender: a, inflight: 1, messageBytes: size });
      const over = rowKey({ contender: b, inflight: 1, messageBytes: size });
      const x = p50.get(of), y = p50.get(over);
      const name = `${of} / ${over}`;
      if (x !== undefined && y) out.push({ name, ratio: x / y, ...(rttGoals[name] === undefined ? {} : { goal: rttGoals[name] }) });
    }
  }
  return out;
}

/** The group's table and its p50 ratios, lines to print (no verdict on a goal from a run cut short). */
export function formatPingpong(rows: PingpongRow[], rtt: Record<string, RttFigures>, ratios: RttRatio[], partial = false): string[] {
  if (rows.length === 0) return [];
  const us = (v: number | undefined) => (v === undefined ? '-' : v.toFixed(1));
  const body = rows.map((r) => {
    const p50s = rtt[rowKey(r)]?.p50Us ?? [];
    return [r.contender, formatBytes(r.messageBytes!), us(r.rttP50Us), us(r.rttP99Us),
      p50s.length ? `${us(Math.min(...p50s))}-${us(Math.max(...p50s))}` : '', r.opsPerSec === null ? 'not run' : formatCount(r.opsPerSec),
      r.jsCpuNsPerOp === undefined ? '' : formatNs(r.jsCpuNsPerOp)];
  });
  const lines = ['ping-pong: one message in flight to a child process that sends it back; round trip time (RTT) in us,',
    'the median of the rounds\' own p50 and p99 (c.pingpong: a C loop, the floor; the others from JS)', '',
    ...table(['contender', 'message', 'p50 RTT us', 'p99 RTT us', 'p50 min-max', 'round trips/s', 'JS-thread CPU/RTT'], body).trimEnd().split('\n'), ''];
  if (ratios.length) lines.push('p50 RTT ratios (lower is better: 0.50x = half the round trip time):');
  for (const r of ratios) {
    const verdict = partial ? 'not judged, the run was cut short' : r.ratio <= r.goal! ? 'met' : 'not met';
    lines.push(`${r.name} = ${r.ratio.toFixed(2)}x${r.goal === undefined ? '' : `  (goal <= ${r.goal.toFixed(1)}x: ${verdict})`}`);
  }
  return lines;
}

/** Median figures of a row, from its rounds. */
export function rttMedians(f: RttFigures | undefined): { rttP50Us?: number; rttP99Us?: number } {
  if (!f || f.p50Us.length === 0) return {};
  return { rttP50Us: median(f.p50Us), rttP99Us: median(f.p99Us) };
}
