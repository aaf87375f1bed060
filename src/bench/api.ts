// `iolab bench api`: what the JS-facing APIs cost per op, measured in one run, contenders
// alternated over rounds, medians and ratios printed. Three groups (--groups):
//   read:     4 KiB random reads of a page-cached file. sync: iolab readv (native.readv) vs
//             fs.readvSync; async: ring.readv vs fs.promises FileHandle.readv vs callback fs.read,
//             1 and 32 in flight; ring.readvBatch: 32 reads per call, one Promise for them
//   fd:       messages carrying one fd each: ring.sendmsg/recvmsg (batched), the sync loop,
//             npm's usocket, and the same loop in C (api-fd.ts)
//   channel:  messages to another process or thread: iolab's shared-memory channel vs
//             process.send, a framed node:net Unix socket, a MessagePort, and memcpy (api-channel.ts)
//   pingpong: one message in flight to a child that echoes it, the round trip's p50 and p99: the
//             Ring, node:net, the channel, and a C loop as the floor (api-pingpong.ts); its rows
//             run after the others', their peer only while they do
// The loops run in JS on purpose: this benchmark measures the JS API, not the kernel.
import { Command, InvalidArgumentError, Option } from 'commander';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { Ring } from '../ring/index.js';
import { commandLine, emitResults, oneLineErrors, UserError } from '../cli-util.js';
import { durationOption, numberOption } from '../numbers.js';
import { notPath, pathOption, resultsOption } from '../path-options.js';
import { formatBytes, formatCount, formatNs, formatRate, median, table } from '../format.js';
import { interruptedBy, interruption, markInterrupted } from '../interrupt.js';
import { machineInfo } from './machine.js';
import { verdictText } from './goals.js';
import { rowKey as key, undoAll, type Contender } from './api-loops.js';
import { blockSize, prepareFile, randomOffsets, readContenders } from './api-read.js';
import { fdContenders } from './api-fd.js';
import { channelContenderNames, channelGroup, channelRatioPairs } from './api-channel.js';
import { servePeer } from './api-channel-peer.js';
import { echoPeerCommand, formatPingpong, pingpongContenderNames, pingpongGroup, rttMedians, rttRatios, type RttFigures, type RttRatio } from './api-pingpong.js';
import { dieWithParentIfAsked } from '../parent-death.js';
import { removeDeadRunsLeftovers, runFolderKind } from '../leftovers.js';

export interface ApiRow {
  contender: string;
  inflight: number;
  /** The channel group's rows: the size of each message (ops are messages). */
  messageBytes?: number;
  /** Median over the rounds; null when the contender could not run (see unavailable). */
  opsPerSec: number | null;
  /** The channel group's rows: opsPerSec x messageBytes. */
  bytesPerSec?: number;
  /** CPU time of the JS thread per op (median, ns): steadier than ops/s on a busy machine. Work
   * done on other threads (c.sendmsg's loop, libuv's pool for fs.*) is not in it. */
  jsCpuNsPerOp?: number;
  /** The ping-pong group's rows: the medians over the rounds of each round's p50 and p99 round trip (us). */
  rttP50Us?: number;
  rttP99Us?: number;
  /** 'pingpong' for that group's rows. */
  group?: 'pingpong';
  unavailable?: string;
}

export interface ApiRatio {
  name: string;
  of: string;
  over: string;
  ratio: number;
  goal?: number;
}

export const apiGroups = ['read', 'fd', 'channel', 'pingpong'];

export interface ApiOptions {
  rounds: number;
  durationMs: number;
  fileSize: number;
  file?: string;
  only?: string[];
  /** Of apiGroups; all when omitted. */
  groups?: string[];
  /** The ping-pong group: round trips per run, instead of as many as fit in durationMs. */
  roundTrips?: number;
}

export interface ApiResults {
  rows: ApiRow[];
  ratios: ApiRatio[];
  rounds: Record<string, number[]>;
  /** The ping-pong rows' p50 and p99 of every round (us). */
  rtt: Record<string, RttFigures>;
  /** The ping-pong rows' p50 ratios (lower is better). */
  rttRatios: RttRatio[];
  /** Set when a signal ended the run early: the rows hold the rounds that finished. */
  partial?: string;
}

/** CPU time this (the JS) thread has run, in ns: the scheduler's own count. */
function jsThreadCpuNs(): number {
  return Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
}

/** The groups' contenders and how to undo their setup. */
/** A group measured on its own: its peers started before its rounds and stopped after. */
interface GroupPhase {
  group: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function setUpGroups(options: ApiOptions): Promise<{ list: Contender[]; cleanup: () => Promise<void>; phases: GroupPhase[] }> {
  const groups = options.groups ?? apiGroups;
  const list: Contender[] = [];
  const undo: (() => unknown)[] = [];
  const cleanup = () => undoAll(undo);
  try {
    if (groups.includes('read') || groups.includes('fd')) {
      const ring = new Ring({ entries: 256 });
      undo.push(() => ring.close());
      if (groups.includes('read')) {
        const file = prepareFile(options);
        undo.push(() => file.cleanup());
        const fd = fs.openSync(file.path, 'r');
        undo.push(() => fs.closeSync(fd));
        const handle = await fs.promises.open(file.path, 'r');
        undo.push(() => handle.close());
        list.push(...readContenders(fd, handle, ring, randomOffsets(file.blocks)));
      }
      if (groups.includes('fd')) {
        // a file to pass: any open file does; this module's own
        const fdSource = fs.openSync(fileURLToPath(import.meta.url), 'r');
        undo.push(() => fs.closeSync(fdSource));
        const fdBench = fdContenders(ring, fdSource);
        undo.push(() => fdBench.cleanup());
        list.push(...fdBench.list);
      }
    }
    // its peers take a second or two to start: not for an --only that names none of its rows
    const named = (o: string) => channelContenderNames.includes(o.split('/')[0]);
    // the channel and ping-pong groups' peers start when their rounds do, and stop after them
    const phases: GroupPhase[] = [];
    if (groups.includes('channel') && (options.only === undefined || options.only.some(named))) {
      const channel = channelGroup();
      undo.push(() => channel.cleanup());
      list.push(...channel.list);
      phases.push({ group: 'channel', start: channel.start, stop: channel.cleanup });
    }
    if (groups.includes('pingpong')) {
      const pingpong = pingpongGroup(options.roundTrips);
      let stopped: Promise<void> | undefined;
      const stop = () => (stopped ??= pingpong.cleanup()); // after its rounds, and at the end: once
      undo.push(stop);
      list.push(...pingpong.list);
      phases.push({ group: 'pingpong', start: () => pingpong.start(), stop });
    }
    return { list, cleanup, phases };
  } catch (err) {
    await cleanup();
    throw err;
  }
  return { list, cleanup, phases: [] };
}

/** Whether signal aborts within ms (at once when it has). */
function abortedSoon(signal: AbortSignal, ms: number): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve(false); }, ms);
    const onAbort = () => { clearTimeout(timer); resolve(true); };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * step's result; undefined when it failed because the run was interrupted. A signal sent to the
 * whole process group (`timeout`, kill -- -PGID) ends the peers too: what they fail is the
 * interrupted run, not an error of its own. A peer's end can be seen before this process's own
 * copy of the signal, so that is given a moment.
 */
async function unlessInterrupted<T>(signal: AbortSignal, step: () => Promise<T>): Promise<T | undefined> {
  try {
    return await step();
  } catch (err) {
    if (await abortedSoon(signal, 250)) return undefined;
    throw err;
  }
}

interface RoundSamples {
  samples: Record<string, number[]>;
  cpuSamples: Record<string, number[]>;
  rtt: Record<string, RttFigures>;
}

/** Rounds of the runnable contenders, alternating their order; false when a signal ended them. */
async function runRounds(runnable: Contender[], options: ApiOptions, signal: AbortSignal, out: RoundSamples, what: string,
  progress?: (line: string) => void): Promise<boolean> {
  if (runnable.length === 0) return !signal.aborted;
  for (const c of runnable) {
    await new Promise((resolve) => setImmediate(resolve));
    if (signal.aborted) return false;
    if (!(await unlessInterrupted(signal, () => c.run(Math.min(50, options.durationMs))))) return false; // warm up the JIT
  }
  for (let round = 0; round < options.rounds; round++) {
    // Alternate: each round starts one contender later, so none always runs first or last.
    for (let k = 0; k < runnable.length; k++) {
      // Back to the event loop between runs (a sync contender never leaves it), so a signal is
      // seen: a contender runs for --duration at most, then the run stops.
      await new Promise((resolve) => setImmediate(resolve));
      if (signal.aborted) return false;
      const c = runnable[(round + k) % runnable.length];
      const cpu = jsThreadCpuNs();
      const m = await unlessInterrupted(signal, () => c.run(options.durationMs));
      if (m === undefined) return false;
      (out.samples[key(c)] ??= []).push(m.ops / m.seconds);
      (out.cpuSamples[key(c)] ??= []).push((jsThreadCpuNs() - cpu) / Math.max(1, m.ops));
      if (m.rtt) {
        const f = (out.rtt[key(c)] ??= { p50Us: [], p99Us: [] });
        f.p50Us.push(m.rtt.p50Ns / 1e3);
        f.p99Us.push(m.rtt.p99Ns / 1e3);
      }
    }
    progress?.(`${what}round ${round + 1}/${options.rounds} done`);
  }
  return true;
}

/** Runs every contender `rounds` times, alternating their order, and returns the medians. */
export async function runApiBench(options: ApiOptions, progress?: (line: string) => void): Promise<ApiResults> {
  const signal = interruption();
  // a run killed before its cleanup (SIGKILL, a third signal) left these: each name has its pid
  removeDeadRunsLeftovers([runFolderKind('iolab-bench-api'),
    { folder: tmpdir(), pattern: /^iolab-api-zmq-(\d+)-[0-9a-f]{8}\.sock$/, what: 'the zeromq socket' }], 'a bench api run');
  const setup = await setUpGroups(options);
  try {
    let all = setup.list;
    if (options.only) {
      const unknown = options.only.filter((o) => !all.some((c) => c.contender === o || key(c) === o));
      if (unknown.length > 0) {
        const known = [...all.map((c) => c.contender), ...((options.groups ?? apiGroups).includes('channel') ? channelContenderNames : [])];
        throw new UserError(`--only: no contender named ${unknown.map((o) => `'${o}'`).join(', ')} (known: ` +
          `${[...new Set(known)].join(', ')}; name@N picks one in-flight count, e.g. ring.readv@32, name/size one message size, e.g. channel/64)`);
      }
      all = all.filter((c) => options.only!.some((o) => c.contender === o || key(c) === o));
    }
    const runnable = all.filter((c) => c.unavailable === undefined);
    const out: RoundSamples = { samples: {}, cpuSamples: {}, rtt: {} };
    // the in-process groups first, then each group with peers alone, its peers up only meanwhile
    const phased = new Set(setup.phases.map((p) => p.group));
    let going = await runRounds(runnable.filter((c) => c.group === undefined || !phased.has(c.group)), options, signal, out, '', progress);
    for (const phase of setup.phases) {
      const mine = runnable.filter((c) => c.group === phase.group);
      if (!going || mine.length === 0) continue;
      if ((await unlessInterrupted(signal, async () => { await phase.start(); return true; })) === undefined) {
        going = false;
        continue;
      }
      try {
        going = await runRounds(mine, options, signal, out, phase.group === 'pingpong' ? 'ping-pong ' : `${phase.group} `, progress);
      } finally {
        await phase.stop();
      }
    }
    const { samples, cpuSamples } = out;
    const rows: ApiRow[] = all.map((c) => {
      const s = samples[key(c)];
      const row = { contender: c.contender, inflight: c.inflight, ...(c.messageBytes === undefined ? {} : { messageBytes: c.messageBytes }),
        ...(c.group === 'pingpong' ? { group: c.group } : {}) };
      if (c.unavailable !== undefined) return { ...row, opsPerSec: null, unavailable: c.unavailable };
      if (!s) return { ...row, opsPerSec: null };
      const opsPerSec = Math.round(median(s));
      if (c.group === 'pingpong') return { ...row, opsPerSec, jsCpuNsPerOp: Math.round(median(cpuSamples[key(c)])), ...rttMedians(out.rtt[key(c)]) };
      return { ...row, opsPerSec, ...(c.messageBytes === undefined ? {} : { bytesPerSec: opsPerSec * c.messageBytes }),
        jsCpuNsPerOp: Math.round(median(cpuSamples[key(c)])) };
    });
    const by = interruptedBy();
    const pingpongRows = rows.filter((r) => pingpongContenderNames.includes(r.contender));
    return { rows, ratios: ratios(rows), rounds: samples, rtt: out.rtt, rttRatios: rttRatios(pingpongRows), ...(signal.aborted ? { partial: `interrupted by ${by ?? 'a signal'}` } : {}) };
  } finally {
    await setup.cleanup();
  }
}

function ratios(rows: ApiRow[]): ApiRatio[] {
  const pairs: [string, number, string, number, number?][] = [
    ['iolab.readvSync', 1, 'fs.readvSync', 1, 1.0],
    ['ring.readv', 1, 'fs.promises.readv', 1],
    ['ring.readv', 1, 'fs.read', 1],
    ['ring.readv', 32, 'fs.promises.readv', 32, 3.0],
    ['ring.readv', 32, 'fs.read', 32, 1.5],
    ['ring.readv', 32, 'fs.readvSync', 1, 0.8],
    ['ring.readvBatch', 32, 'fs.readvSync', 1, 1.0],
    ['ring.readvBatch', 32, 'ring.readv', 32],
    ['ring.sendmsg', 32, 'iolab.sendmsg', 1],
    ['ring.sendmsg', 32, 'c.sendmsg', 1],
    ['iolab.sendmsg', 1, 'c.sendmsg', 1],
    ['ring.sendmsgBatch', 32, 'ring.sendmsg', 32],
    ['iolab.sendmsg', 1, 'usocket', 32, 1.5],
    ['ring.sendmsg', 32, 'usocket', 32, 2.0],
    ['ring.sendmsgBatch', 32, 'usocket', 32, 2.0],
  ];
  const named: [string, string, number?][] = pairs.map(([a, an, b, bn, goal]) => [`${a}@${an}`, `${b}@${bn}`, goal]);
  const byKey = new Map(rows.map((r) => [key(r), r.opsPerSec]));
  const out: ApiRatio[] = [];
  for (const [of, over, goal] of [...named, ...channelRatioPairs(byKey)]) {
    const x = byKey.get(of), y = byKey.get(over);
    if (x === undefined || x === null || y === undefined || y === null || y === 0) continue;
    out.push({ name: `${of} / ${over}`, of, over, ratio: Math.round((x / y) * 100) / 100, ...(goal ? { goal } : {}) });
  }
  return out;
}

export function formatApiResults(results: ApiResults, options: ApiOptions): string[] {
  const groups = options.groups ?? apiGroups;
  const what = [groups.includes('read') ? '4 KiB random reads from a page-cached file' : '', groups.includes('fd') ? 'fd messages' : '',
    groups.includes('channel') ? 'messages to another process or thread' : '', groups.includes('pingpong') ? 'round trips to a child process' : ''].filter((w) => w !== '').join(', ');
  const lines = [`bench api: ${what}; ${options.rounds} rounds of ${options.durationMs} ms, alternating; medians`, ''];
  if (results.partial) lines.push(`partial: ${results.partial}; the rows hold the rounds that finished`, '');
  const cells = (r: ApiRow, rate: (n: number) => string) => {
    const s = results.rounds[key(r)];
    // a contender the interrupted run never reached is not one that cannot run
    if (r.opsPerSec === null || !s) return [r.unavailable === undefined && results.partial ? 'not reached' : 'unavailable', '', '', ''];
    return [rate(r.opsPerSec), rate(Math.min(...s)), rate(Math.max(...s)), r.jsCpuNsPerOp === undefined ? '' : formatNs(r.jsCpuNsPerOp)];
  };
  const ops = results.rows.filter((r) => r.messageBytes === undefined);
  if (ops.length > 0) {
    const body = ops.map((r) => [r.contender, String(r.inflight), ...cells(r, formatCount)]);
    lines.push(...table(['contender', 'in flight', 'ops/s (median)', 'min', 'max', 'JS-thread CPU/op'], body).trimEnd().split('\n'), '');
  }
  const messages = results.rows.filter((r) => r.messageBytes !== undefined && r.group === undefined);
  if (messages.length > 0) {
    const body = messages.map((r) => [r.contender, formatBytes(r.messageBytes!), ...cells(r, formatCount),
      r.bytesPerSec === undefined ? '' : formatRate(r.bytesPerSec)]);
    lines.push(...table(['contender', 'message', 'messages/s (median)', 'min', 'max', 'JS-thread CPU/msg', 'bytes/s'], body).trimEnd().split('\n'), '');
  }
  const pingpong = formatPingpong(results.rows.filter((r) => r.group === 'pingpong'), results.rtt, results.rttRatios, results.partial !== undefined);
  if (pingpong.length > 0) lines.push(...pingpong, '');
  for (const r of results.rows) if (r.unavailable) lines.push(`${r.contender}: ${r.unavailable}`);
  if (results.rows.some((r) => r.unavailable)) lines.push('');
  const verdict = (goal: string, met: boolean) => `  (goal >= ${goal}: ${verdictText(met, results.partial !== undefined)})`;
  for (const r of results.ratios) {
    const goal = r.goal === undefined ? '' : verdict(`${Number.isInteger(r.goal * 10) ? r.goal.toFixed(1) : r.goal}x`, r.ratio >= r.goal);
    lines.push(`${r.name} = ${r.ratio.toFixed(2)}x${goal}`);
  }
  const fdRow = results.rows.find((r) => r.contender === 'ring.sendmsg');
  if (fdRow?.opsPerSec) lines.push(`ring.sendmsg messages/s = ${formatCount(fdRow.opsPerSec)}${verdict('330,000', fdRow.opsPerSec >= 330_000)}`);
  return lines;
}

function peerCommand(): Command {
  return new Command('peer')
    .description('the receiving process of bench api\'s channel group (started by bench api itself)')
    .requiredOption('--channel-fd <fd>', 'the channel socket bench api passed', numberOption({ min: 0 }))
    .requiredOption('--net-fd <fd>', 'the net.unix socket bench api passed', numberOption({ min: 0 }))
    .option('--zero-copy-fd <fd>', 'the socket of the channel whose messages come as views', numberOption({ min: 0 }))
    .addOption(notPath(new Option('--zmq <address>', 'the zeromq PUSH socket\'s address to pull from (ipc://...)')))
    .action(async (opts: { channelFd: number; netFd: number; zmq?: string; zeroCopyFd?: number }) => {
      dieWithParentIfAsked();
      // a terminal's Ctrl-C reaches the process group: bench api ends this process in order
      process.on('SIGINT', () => {});
      await servePeer({ on: (listener) => process.on('message', listener), send: (reply) => process.send!(reply) },
        opts.channelFd, { net: opts.netFd, zmq: opts.zmq, zeroCopy: opts.zeroCopyFd });
      process.disconnect();
    });
}

function groupsOption(value: string): string[] {
  const groups = value.split(',').map((g) => g.trim()).filter((g) => g !== '');
  const unknown = groups.filter((g) => !apiGroups.includes(g));
  if (groups.length === 0 || unknown.length > 0) {
    throw new InvalidArgumentError(`expected groups of ${apiGroups.join(', ')}, got '${value}'`);
  }
  return groups;
}

export function apiCommand(): Command {
  const cmd = new Command('api')
    .description('the JS API cost per op: iolab readv vs fs.readvSync, ring.readv vs fs.promises / fs.read, fd messages via the Ring vs sync, the shared-memory channel vs process.send / net / zeromq / MessagePort / a SharedArrayBuffer ring / a C ring, and ping-pong round trips (Ring, net, channel, C)')
    .option('--rounds <n>', 'rounds (contenders alternate within each)', numberOption({ min: 1 }), 5)
    .addOption(new Option('--duration <time>', 'time per contender per round: 300ms, 2s; with its unit (a bare number was milliseconds here, and is seconds elsewhere)')
      .argParser(durationOption({ wholeMs: true, bareWas: 'milliseconds' })).default(300, '300ms'))
    .option('--size <bytes>', 'size of the temporary test file (4k/1m/1g suffixes)', numberOption({ min: blockSize, size: true }), 64 << 20)
    .addOption(pathOption('--file <path>', 'read this file instead of a temporary one', { output: false }))
    .option('--groups <list>', `comma-separated groups to run: ${apiGroups.join(', ')} (default: all)`, groupsOption)
    .option('--only <list>', 'comma-separated contenders to run (e.g. ring.readv,fs.read, ring.readv@32, channel/64 or ring.pingpong/1k)')
    .option('--round-trips <n>', 'ping-pong group: round trips per contender per round, instead of as many as fit in --duration', numberOption({ min: 1 }))
    .option('--json', 'print the results as one JSON object instead of the table: {"rows":[{"contender","inflight","opsPerSec"}],"ratios":[...]}')
    .addOption(resultsOption('also write the results as JSON to this file (npm run bench:api: bench-results/api.json)'))
    .option('--force', 'replace an existing --output file (or a symlink itself, never its target)')
    .addHelpText('after', `
Contenders: iolab.readvSync, fs.readvSync (sync, 1 in flight); ring.readv, fs.promises.readv,
fs.read (async, 1 and 32 in flight); ring.readvBatch (32 reads per readvBatch call, one
Promise for them); ring.sendmsg (32 messages in flight, a Promise per op),
ring.sendmsgBatch (the same, 32 per sendmsgBatch/recvmsgBatch/closeFds call), iolab.sendmsg
(sync loop) and usocket (npm's fd-passing stream, 32 in flight; "unavailable" where it does
not load): 1-byte messages carrying one fd each, sent, received and closed; c.sendmsg is the
same loop in C off the JS thread, the floor the kernel sets on this machine.
The channel group (rows contender/size, 64 B, 1 KiB, 64 KiB and 1 MiB messages, each checked
by the receiver): channel (iolab's shared-memory channel to a child process), channel.worker
(to a worker thread), process.send (Node's IPC to the child), net.unix (a node:net Unix socket
to the child, messages framed by their length, corked 64 at a time), zeromq (zeromq 6 PUSH/PULL
over ipc:// to the child, where zeromq is installed), sab.worker (a SharedArrayBuffer ring with
Atomics.waitAsync to the worker), MessagePort (to the worker), c.shm-ring (bench ipc's ring in
shared memory, C on both sides: the limit between processes), memcpy (one copy in C).
The ping-pong group (rows contender/size, 64 B, 1 KiB and 64 KiB, one message in flight to a
child process that sends it back; p50 and p99 round trip in us): ring.pingpong (ring.recv and
ring.send on a socketpair), net.pingpong (a node:net Socket on another), channel.pingpong
(iolab's Channel), c.pingpong (ring's exchange as a C loop off the JS thread: the floor). The
child echoes the sockets in C, the channel in JS; it runs only while the group does, after
the other groups.
Every contender runs once per round; each round starts one contender later.

Examples:
  $ iolab bench api --rounds 3 --duration 200ms
  $ iolab bench api --groups channel    (npm run bench:channel)
  $ iolab bench api --groups pingpong   (npm run bench:pingpong)`)
    .action(async (opts: { rounds: number; duration: number; size: number; file?: string; groups?: string[]; only?: string; roundTrips?: number;
      output?: string; json?: boolean }) => {
      const options: ApiOptions = {
        rounds: opts.rounds, durationMs: opts.duration, fileSize: opts.size, file: opts.file, groups: opts.groups,
        ...(opts.roundTrips === undefined ? {} : { roundTrips: opts.roundTrips }),
        only: opts.only?.split(',').map((s) => s.trim()).filter((s) => s !== ''),
      };
      const results = await runApiBench(options, opts.json ? undefined : (l) => process.stderr.write(`${l}\n`));
      const json = { rows: results.rows, ratios: results.ratios, rounds: results.rounds, rtt: results.rtt, rttRatios: results.rttRatios, options,
        ...(results.partial ? { partial: results.partial } : {}),
        date: new Date().toISOString(), machine: machineInfo(options.file ?? tmpdir()), command: commandLine() };
      if (results.partial) markInterrupted();
      emitResults(opts, json, formatApiResults(results, options).join('\n') + '\n');
    });
  cmd.addCommand(peerCommand(), { hidden: true });
  cmd.addCommand(echoPeerCommand(), { hidden: true });
  return oneLineErrors(cmd);
}
