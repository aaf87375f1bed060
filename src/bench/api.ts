// `iolab bench api`: what the JS-facing APIs cost per op, measured in one run on a page-cached
// file with 4 KiB random reads, contenders alternated over rounds, medians and ratios printed.
//   sync:   iolab readv (native.readv) vs fs.readvSync
//   async:  ring.readv vs fs.promises FileHandle.readv vs callback fs.read, 1 and 32 in flight;
//           ring.readvBatch: 32 reads per call, one Promise for them
//   fds:    messages carrying one fd each: ring.sendmsg/recvmsg (batched), the sync loop,
//           npm's usocket, and the same loop in C (api-fd.ts)
// The loops run in JS on purpose: this benchmark measures the JS API, not the kernel.
import { Command } from 'commander';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { Ring } from '../ring/index.js';
import { commandLine, emitReport, oneLineErrors, UserError } from '../cli-util.js';
import { numberOption } from '../numbers.js';
import { pathOption, resultsOption } from '../path-options.js';
import { formatCount, formatNs, median, table } from '../format.js';
import { interruptedBy, interruption, markInterrupted } from '../interrupt.js';
import { machineInfo } from './machine.js';
import type { Contender } from './api-loops.js';
import { blockSize, prepareFile, randomOffsets, readContenders } from './api-read.js';
import { fdContenders } from './api-fd.js';

export interface ApiRow {
  contender: string;
  inflight: number;
  /** Median over the rounds; null when the contender could not run (see unavailable). */
  opsPerSec: number | null;
  /** CPU time of the JS thread per op (median, ns): steadier than ops/s on a busy machine. Work
   * done on other threads (c.sendmsg's loop, libuv's pool for fs.*) is not in it. */
  jsCpuNsPerOp?: number;
  unavailable?: string;
}

export interface ApiRatio {
  name: string;
  of: string;
  over: string;
  ratio: number;
  goal?: number;
}

export interface ApiOptions {
  rounds: number;
  durationMs: number;
  fileSize: number;
  file?: string;
  only?: string[];
}

export interface ApiReport {
  rows: ApiRow[];
  ratios: ApiRatio[];
  rounds: Record<string, number[]>;
  /** Set when a signal ended the run early: the rows hold the rounds that finished. */
  partial?: string;
}

const key = (c: { contender: string; inflight: number }) => `${c.contender}@${c.inflight}`;

/** CPU time this (the JS) thread has run, in ns: the scheduler's own count. */
function jsThreadCpuNs(): number {
  return Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
}

/** Runs every contender `rounds` times, alternating their order, and returns the medians. */
export async function runApiBench(options: ApiOptions, progress?: (line: string) => void): Promise<ApiReport> {
  const file = prepareFile(options);
  const fd = fs.openSync(file.path, 'r');
  const handle = await fs.promises.open(file.path, 'r');
  const ring = new Ring({ entries: 256 });
  const fdSource = fs.openSync(file.path, 'r');
  const fdBench = fdContenders(ring, fdSource);
  const signal = interruption();
  try {
    let all: Contender[] = [...readContenders(fd, handle, ring, randomOffsets(file.blocks)), ...fdBench.list];
    if (options.only) {
      const unknown = options.only.filter((o) => !all.some((c) => c.contender === o || key(c) === o));
      if (unknown.length > 0) {
        throw new UserError(`--only: no contender named ${unknown.map((o) => `'${o}'`).join(', ')} (known: ` +
          `${[...new Set(all.map((c) => c.contender))].join(', ')}; name@N picks one in-flight count, e.g. ring.readv@32)`);
      }
      all = all.filter((c) => options.only!.some((o) => c.contender === o || key(c) === o));
    }
    const runnable = all.filter((c) => c.unavailable === undefined);
    for (const c of runnable) {
      await new Promise((resolve) => setImmediate(resolve));
      if (signal.aborted) break;
      await c.run(Math.min(50, options.durationMs)); // warm up the JIT
    }
    const samples: Record<string, number[]> = {};
    const cpuSamples: Record<string, number[]> = {};
    rounds: for (let round = 0; round < options.rounds; round++) {
      // Alternate: each round starts one contender later, so none always runs first or last.
      for (let k = 0; k < runnable.length; k++) {
        // Back to the event loop between runs (a sync contender never leaves it), so a signal is
        // seen: a contender runs for --duration at most, then the run stops.
        await new Promise((resolve) => setImmediate(resolve));
        if (signal.aborted) break rounds;
        const c = runnable[(round + k) % runnable.length];
        const cpu = jsThreadCpuNs();
        const m = await c.run(options.durationMs);
        (samples[key(c)] ??= []).push(m.ops / m.seconds);
        (cpuSamples[key(c)] ??= []).push((jsThreadCpuNs() - cpu) / Math.max(1, m.ops));
      }
      progress?.(`round ${round + 1}/${options.rounds} done`);
    }
    const rows: ApiRow[] = all.map((c) => {
      const s = samples[key(c)];
      if (c.unavailable !== undefined) return { contender: c.contender, inflight: c.inflight, opsPerSec: null, unavailable: c.unavailable };
      if (!s) return { contender: c.contender, inflight: c.inflight, opsPerSec: null };
      return { contender: c.contender, inflight: c.inflight, opsPerSec: Math.round(median(s)), jsCpuNsPerOp: Math.round(median(cpuSamples[key(c)])) };
    });
    const by = interruptedBy();
    return { rows, ratios: ratios(rows), rounds: samples, ...(signal.aborted ? { partial: `interrupted by ${by ?? 'a signal'}` } : {}) };
  } finally {
    await ring.close();
    fdBench.cleanup();
    fs.closeSync(fdSource);
    await handle.close();
    fs.closeSync(fd);
    file.cleanup();
  }
}

function ratios(rows: ApiRow[]): ApiRatio[] {
  const get = (c: string, n: number) => rows.find((r) => r.contender === c && r.inflight === n)?.opsPerSec;
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
  const out: ApiRatio[] = [];
  for (const [a, an, b, bn, goal] of pairs) {
    const x = get(a, an), y = get(b, bn);
    if (x === undefined || x === null || y === undefined || y === null || y === 0) continue;
    out.push({ name: `${a}@${an} / ${b}@${bn}`, of: `${a}@${an}`, over: `${b}@${bn}`, ratio: Math.round((x / y) * 100) / 100, ...(goal ? { goal } : {}) });
  }
  return out;
}

export function formatApiReport(report: ApiReport, options: ApiOptions): string[] {
  const lines = [`bench api: 4 KiB random reads from a page-cached file; ${options.rounds} rounds of ${options.durationMs} ms, alternating; medians`, ''];
  if (report.partial) lines.push(`partial: ${report.partial}; the rows hold the rounds that finished`, '');
  const head = ['contender', 'in flight', 'ops/s (median)', 'min', 'max', 'JS-thread CPU/op'];
  const body = report.rows.map((r) => {
    const s = report.rounds[key(r)];
    if (r.opsPerSec === null || !s) return [r.contender, String(r.inflight), 'unavailable', '', '', ''];
    return [r.contender, String(r.inflight), formatCount(r.opsPerSec), formatCount(Math.min(...s)), formatCount(Math.max(...s)),
      r.jsCpuNsPerOp === undefined ? '' : formatNs(r.jsCpuNsPerOp)];
  });
  lines.push(...table(head, body).trimEnd().split('\n'), '');
  for (const r of report.rows) if (r.unavailable) lines.push(`${r.contender}: ${r.unavailable}`);
  if (report.rows.some((r) => r.unavailable)) lines.push('');
  for (const r of report.ratios) {
    const goal = r.goal === undefined ? '' : `  (goal >= ${r.goal.toFixed(1)}x: ${r.ratio >= r.goal ? 'met' : 'not met'})`;
    lines.push(`${r.name} = ${r.ratio.toFixed(2)}x${goal}`);
  }
  const fdRow = report.rows.find((r) => r.contender === 'ring.sendmsg');
  if (fdRow?.opsPerSec) lines.push(`ring.sendmsg messages/s = ${formatCount(fdRow.opsPerSec)}  (goal >= 330,000: ${fdRow.opsPerSec >= 330_000 ? 'met' : 'not met'})`);
  return lines;
}

export function apiCommand(): Command {
  return oneLineErrors(new Command('api')
    .description('the JS API cost per op: iolab readv vs fs.readvSync, ring.readv vs fs.promises / fs.read, fd messages via the Ring vs sync')
    .option('--rounds <n>', 'rounds (contenders alternate within each)', numberOption({ min: 1 }), 5)
    .option('--duration <ms>', 'time per contender per round, in milliseconds', numberOption({ min: 1 }), 300)
    .option('--size <bytes>', 'size of the temporary test file (4k/1m/1g suffixes)', numberOption({ min: blockSize, size: true }), 64 << 20)
    .addOption(pathOption('--file <path>', 'read this file instead of a temporary one', { output: false }))
    .option('--only <list>', 'comma-separated contenders to run (e.g. ring.readv,fs.read or ring.readv@32)')
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
Every contender runs once per round; each round starts one contender later.

Example:
  $ iolab bench api --rounds 3 --duration 200`)
    .action(async (opts: { rounds: number; duration: number; size: number; file?: string; only?: string; output?: string; json?: boolean }) => {
      const options: ApiOptions = {
        rounds: opts.rounds, durationMs: opts.duration, fileSize: opts.size, file: opts.file,
        only: opts.only?.split(',').map((s) => s.trim()).filter((s) => s !== ''),
      };
      const report = await runApiBench(options, opts.json ? undefined : (l) => process.stderr.write(`${l}\n`));
      const json = { rows: report.rows, ratios: report.ratios, rounds: report.rounds, options,
        ...(report.partial ? { partial: report.partial } : {}),
        date: new Date().toISOString(), machine: machineInfo(options.file ?? tmpdir()), command: commandLine() };
      if (report.partial) markInterrupted();
      emitReport(opts, json, formatApiReport(report, options).join('\n') + '\n');
    }));
}
