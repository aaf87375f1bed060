// `iolab bench api`: what the JS-facing APIs cost per op, measured in one run on a page-cached
// file with 4 KiB random reads, contenders alternated over rounds, medians and ratios printed.
//   sync:   iolab readv (native.readv) vs fs.readvSync
//   async:  ring.readv vs fs.promises FileHandle.readv vs callback fs.read, 1 and 32 in flight
//   fds:    messages carrying one fd each: ring.sendmsg/recvmsg (batched) vs the sync loop
// The loops run in JS on purpose: this benchmark measures the JS API, not the kernel.
import { Command } from 'commander';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { native } from '../native.js';
import { Ring } from '../ring.js';
import { commandLine, oneLineErrors, printJson, UserError, writeJsonFile } from '../cli-util.js';
import { numberOption } from '../numbers.js';
import { formatCount, median, table } from '../format.js';
import { machineInfo } from './machine.js';

const blockSize = 4096;

export interface ApiRow {
  contender: string;
  inflight: number;
  opsPerSec: number;
}

export interface ApiRatio {
  name: string;
  of: string;
  over: string;
  ratio: number;
  goal?: number;
}

interface Measured {
  ops: number;
  seconds: number;
}

interface Contender {
  contender: string;
  inflight: number;
  run(durationMs: number): Promise<Measured>;
}

export interface ApiOptions {
  rounds: number;
  durationMs: number;
  fileSize: number;
  file?: string;
  only?: string[];
}

// ---- loops ----

function syncLoop(durationMs: number, op: (i: number) => void): Measured {
  const start = performance.now();
  const end = start + durationMs;
  let ops = 0;
  for (;;) {
    for (let k = 0; k < 64; k++) op(ops++);
    if (performance.now() >= end) break;
  }
  return { ops, seconds: (performance.now() - start) / 1000 };
}

async function promiseLoop(durationMs: number, inflight: number,
  op: (slot: number, i: number) => Promise<unknown>): Promise<Measured> {
  const start = performance.now();
  const end = start + durationMs;
  let ops = 0;
  let stop = false;
  const worker = async (slot: number) => {
    while (!stop) {
      await op(slot, ops++);
      if (performance.now() >= end) stop = true;
    }
  };
  await Promise.all(Array.from({ length: inflight }, (_, slot) => worker(slot)));
  return { ops, seconds: (performance.now() - start) / 1000 };
}

function callbackReadLoop(durationMs: number, inflight: number, fd: number, buffers: Buffer[],
  offsets: Float64Array): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const end = start + durationMs;
    const mask = offsets.length - 1;
    let ops = 0;
    let active = inflight;
    let stop = false;
    const issue = (slot: number) => {
      fs.read(fd, buffers[slot], 0, blockSize, offsets[ops++ & mask], (err) => {
        if (err) {
          stop = true;
          reject(err);
          return;
        }
        if (!stop && performance.now() >= end) stop = true;
        if (!stop) issue(slot);
        else if (--active === 0) resolve({ ops, seconds: (performance.now() - start) / 1000 });
      });
    };
    for (let slot = 0; slot < inflight; slot++) issue(slot);
  });
}

// ---- setup ----

/** A file of `size` random bytes (or the user's), read once so it is in the page cache. */
function prepareFile(options: ApiOptions): { path: string; blocks: number; cleanup: () => void } {
  if (options.file !== undefined) {
    const st = fs.statSync(options.file);
    if (!st.isFile()) throw new UserError(`${options.file} is not a regular file`);
    if (st.size < blockSize) throw new UserError(`${options.file} is smaller than one 4 KiB block`);
    fs.readFileSync(options.file);
    return { path: options.file, blocks: Math.floor(st.size / blockSize), cleanup: () => {} };
  }
  const dir = fs.mkdtempSync(join(tmpdir(), 'iolab-bench-api-'));
  const path = join(dir, 'data');
  const chunk = randomBytes(1 << 20);
  const fd = fs.openSync(path, 'w');
  try {
    for (let done = 0; done < options.fileSize; done += chunk.length) {
      fs.writeSync(fd, chunk, 0, Math.min(chunk.length, options.fileSize - done));
    }
  } finally {
    fs.closeSync(fd);
  }
  fs.readFileSync(path);
  return { path, blocks: Math.floor(options.fileSize / blockSize), cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

function randomOffsets(blocks: number): Float64Array {
  const offsets = new Float64Array(1 << 16);
  for (let i = 0; i < offsets.length; i++) offsets[i] = Math.floor(Math.random() * blocks) * blockSize;
  return offsets;
}

function contenders(fd: number, handle: fs.promises.FileHandle, ring: InstanceType<typeof Ring>,
  offsets: Float64Array): Contender[] {
  const mask = offsets.length - 1;
  const slots = 32;
  const buffers = Array.from({ length: slots }, () => Buffer.alloc(blockSize));
  const vectors = buffers.map((b) => [b]);
  const list: Contender[] = [
    { contender: 'iolab.readv', inflight: 1, run: async (ms) => syncLoop(ms, (i) => native.readv(fd, vectors[0], offsets[i & mask])) },
    { contender: 'fs.readvSync', inflight: 1, run: async (ms) => syncLoop(ms, (i) => fs.readvSync(fd, vectors[0], offsets[i & mask])) },
  ];
  for (const inflight of [1, 32]) {
    list.push(
      { contender: 'ring.readv', inflight, run: (ms) => promiseLoop(ms, inflight, (s, i) => ring.readv(fd, vectors[s], offsets[i & mask])) },
      { contender: 'fs.promises.readv', inflight, run: (ms) => promiseLoop(ms, inflight, (s, i) => handle.readv(vectors[s], offsets[i & mask])) },
      { contender: 'fs.read', inflight, run: (ms) => callbackReadLoop(ms, inflight, fd, buffers, offsets) },
    );
  }
  return list;
}

// Messages of one byte carrying one fd each, over a stream socketpair; the receiver closes
// every fd it gets (as a real receiver would), so both loops do the same three things.
function fdContenders(ring: InstanceType<typeof Ring>, passed: number): { list: Contender[]; cleanup: () => void } {
  const [ra, rb] = native.socketpair('stream');
  const [sa, sb] = native.socketpair('stream');
  const message = [Buffer.from('m')];
  const sendOptions = { fds: [passed] };
  const recvOptions = { maxFds: 1, controlFds: 1 } as { maxFds: number };
  const inflight = 32;
  const receive = Array.from({ length: inflight }, () => [Buffer.alloc(1)]);
  const list: Contender[] = [
    {
      contender: 'ring.sendmsg', inflight,
      run: async (ms) => {
        let failure: unknown;
        const onError = (err: unknown) => { failure ??= err; };
        const result = await promiseLoop(ms, inflight, async (slot) => {
          ring.sendmsg(ra, message, sendOptions).catch(onError);
          const got = await ring.recvmsg(rb, receive[slot], recvOptions);
          if (got.fds.length !== 1) throw new Error(`expected one fd per message, got ${got.fds.length}`);
          ring.closeFd(got.fds[0]).catch(onError);
        });
        while (ring.inFlight > 0) await ring.nop();
        if (failure !== undefined) throw failure;
        return result;
      },
    },
    {
      // The same three calls per message as a C loop off the JS thread: the kernel's floor.
      contender: 'c.sendmsg', inflight: 1,
      run: async (ms) => {
        const r = await native.benchFdMessages(passed, ms);
        return { ops: r.messages, seconds: r.seconds };
      },
    },
    {
      contender: 'iolab.sendmsg', inflight: 1,
      run: async (ms) => syncLoop(ms, () => {
        native.sendmsg(sa, message, sendOptions);
        const got = native.recvmsg(sb, receive[0], recvOptions);
        native.close(got.fds[0]);
      }),
    },
  ];
  return { list, cleanup: () => [ra, rb, sa, sb].forEach((fd) => native.close(fd)) };
}

export interface ApiReport {
  rows: ApiRow[];
  ratios: ApiRatio[];
  rounds: Record<string, number[]>;
}

const key = (c: { contender: string; inflight: number }) => `${c.contender}@${c.inflight}`;

/** Runs every contender `rounds` times, alternating their order, and returns the medians. */
export async function runApiBench(options: ApiOptions, progress?: (line: string) => void): Promise<ApiReport> {
  const file = prepareFile(options);
  const fd = fs.openSync(file.path, 'r');
  const handle = await fs.promises.open(file.path, 'r');
  const ring = new Ring({ entries: 256 });
  const fdSource = fs.openSync(file.path, 'r');
  const fdBench = fdContenders(ring, fdSource);
  try {
    let all = [...contenders(fd, handle, ring, randomOffsets(file.blocks)), ...fdBench.list];
    if (options.only) all = all.filter((c) => options.only!.some((o) => c.contender === o || key(c) === o));
    if (all.length === 0) throw new UserError('--only matched no contender');
    for (const c of all) await c.run(Math.min(50, options.durationMs)); // warm up the JIT
    const samples: Record<string, number[]> = {};
    for (let round = 0; round < options.rounds; round++) {
      // Alternate: each round starts one contender later, so none always runs first or last.
      for (let k = 0; k < all.length; k++) {
        const c = all[(round + k) % all.length];
        const m = await c.run(options.durationMs);
        (samples[key(c)] ??= []).push(m.ops / m.seconds);
      }
      progress?.(`round ${round + 1}/${options.rounds} done`);
    }
    const rows: ApiRow[] = all.map((c) => ({ contender: c.contender, inflight: c.inflight, opsPerSec: Math.round(median(samples[key(c)])) }));
    return { rows, ratios: ratios(rows), rounds: samples };
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
    ['iolab.readv', 1, 'fs.readvSync', 1, 1.0],
    ['ring.readv', 1, 'fs.promises.readv', 1],
    ['ring.readv', 1, 'fs.read', 1],
    ['ring.readv', 32, 'fs.promises.readv', 32, 3.0],
    ['ring.readv', 32, 'fs.read', 32, 1.5],
    ['ring.sendmsg', 32, 'iolab.sendmsg', 1],
    ['ring.sendmsg', 32, 'c.sendmsg', 1],
    ['iolab.sendmsg', 1, 'c.sendmsg', 1],
  ];
  const out: ApiRatio[] = [];
  for (const [a, an, b, bn, goal] of pairs) {
    const x = get(a, an), y = get(b, bn);
    if (x === undefined || y === undefined || y === 0) continue;
    out.push({ name: `${a}@${an} / ${b}@${bn}`, of: `${a}@${an}`, over: `${b}@${bn}`, ratio: Math.round((x / y) * 100) / 100, ...(goal ? { goal } : {}) });
  }
  return out;
}

export function formatApiReport(report: ApiReport, options: ApiOptions): string[] {
  const lines = [`bench api: 4 KiB random reads from a page-cached file; ${options.rounds} rounds of ${options.durationMs} ms, alternating; medians`, ''];
  const head = ['contender', 'in flight', 'ops/s (median)', 'min', 'max'];
  const body = report.rows.map((r) => {
    const s = report.rounds[key(r)];
    return [r.contender, String(r.inflight), formatCount(r.opsPerSec), formatCount(Math.min(...s)), formatCount(Math.max(...s))];
  });
  lines.push(...table(head, body).trimEnd().split('\n'), '');
  for (const r of report.ratios) {
    const goal = r.goal === undefined ? '' : `  (goal >= ${r.goal.toFixed(1)}x: ${r.ratio >= r.goal ? 'met' : 'not met'})`;
    lines.push(`${r.name} = ${r.ratio.toFixed(2)}x${goal}`);
  }
  const fdRow = report.rows.find((r) => r.contender === 'ring.sendmsg');
  if (fdRow) lines.push(`ring.sendmsg messages/s = ${formatCount(fdRow.opsPerSec)}  (goal >= 330,000: ${fdRow.opsPerSec >= 330_000 ? 'met' : 'not met'})`);
  return lines;
}

export function apiCommand(): Command {
  return oneLineErrors(new Command('api')
    .description('the JS API cost per op: iolab readv vs fs.readvSync, ring.readv vs fs.promises / fs.read, fd messages via the Ring vs sync')
    .option('--rounds <n>', 'rounds (contenders alternate within each)', numberOption({ min: 1 }), 5)
    .option('--duration <ms>', 'time per contender per round, in milliseconds', numberOption({ min: 1 }), 300)
    .option('--size <bytes>', 'size of the temporary test file (4k/1m/1g suffixes)', numberOption({ min: blockSize, size: true }), 64 << 20)
    .option('--file <path>', 'read this file instead of a temporary one')
    .option('--only <list>', 'comma-separated contenders to run (e.g. ring.readv,fs.read or ring.readv@32)')
    .option('--json', 'print the results as one JSON object instead of the table: {"rows":[{"contender","inflight","opsPerSec"}],"ratios":[...]}')
    .option('--output <file>', 'also write the results as JSON to this file (npm run bench:api: bench-results/api.json)')
    .addHelpText('after', `
Contenders: iolab.readv, fs.readvSync (sync, 1 in flight); ring.readv, fs.promises.readv,
fs.read (async, 1 and 32 in flight); ring.sendmsg (32 messages in flight) and iolab.sendmsg
(sync loop): 1-byte messages carrying one fd each, sent, received and closed; c.sendmsg is
the same loop in C off the JS thread, the floor the kernel sets on this machine.
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
        date: new Date().toISOString(), machine: machineInfo(options.file ?? tmpdir()), command: commandLine() };
      if (opts.output) writeJsonFile(opts.output, json);
      if (opts.json) printJson(json);
      else process.stdout.write(formatApiReport(report, options).join('\n') + '\n');
    }));
}
