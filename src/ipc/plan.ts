// What a `bench ipc` run will measure, decided before anything starts: the transports and
// sizes asked for, the cells each transport cannot run here (and why), and whether the
// largest cell fits in memory. Bad input ends here, with one line and nothing started.
import { readFileSync } from 'node:fs';
import { UserError } from '../cli-util.js';
import { formatBytes, formatCount } from '../format.js';
import { formatSize } from '../numbers.js';
import { native, type IpcMode } from '../native.js';
import { knownNames, transportAliases } from '../aliases.js';
import { addonTransport, transportNames } from './transports.js';

export const defaultSizes = [64, 4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20];
export const ipcModes: readonly IpcMode[] = ['throughput', 'pingpong'];
export const memcpyName = 'memcpy';

export interface IpcOptions {
  transports: string[];
  sizes: number[];
  modes: IpcMode[];
  durationMs: number;
  rounds: number;
  checkFull: boolean;
  /** Test knob (IOLAB_IPC_FAULT): the sender spoils this message in every cell ... */
  faultMessage?: number;
  /** ... by repeating the previous message's stamps ("stale:N") rather than changing a byte. */
  faultStale?: boolean;
}

/** A cell that will not run, and why (shown in the table and the JSON): the transport cannot
 * carry a message that big (skipped), or cannot run here at all (unavailable). */
export interface SkippedCell {
  transport: string;
  mode: IpcMode;
  messageBytes: number;
  status: 'skipped' | 'unavailable';
  reason: string;
}

export interface IpcPlan {
  options: IpcOptions;
  /** Per size, the transports that run there (memcpy first), before rotation. */
  runnable: Map<number, string[]>;
  skipped: SkippedCell[];
  /** Cells per round, memcpy included (one per size). */
  cellsPerRound: number;
}

/** "--transports stream-copy,shm-queue" -> the names (old spellings mapped), each one the addon has. */
export function parseTransports(value: string): string[] {
  try {
    return knownNames(value, transportNames, transportAliases, 'transport');
  } catch (err) {
    throw new UserError(`--transports: ${(err as Error).message}`);
  }
}

export function parseModes(value: string): IpcMode[] {
  if (value === 'both') return [...ipcModes];
  if ((ipcModes as readonly string[]).includes(value)) return [value as IpcMode];
  throw new UserError(`--mode: expected throughput, pingpong or both, got '${value}'`);
}

/** MemAvailable from /proc/meminfo, in bytes: what can be had without swapping. */
export function availableMemory(): number {
  const m = /^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) * 1024 : Number.POSITIVE_INFINITY;
}


export function planRun(options: IpcOptions, memory = availableMemory()): IpcPlan {
  const skipped: SkippedCell[] = [];
  const unavailable = new Map(options.transports.map((t) => [t, native.ipcUnavailable(addonTransport(t))]));
  const largest = new Map(options.transports.map((t) => [t, native.ipcLargestMessage(addonTransport(t))]));
  const runnable = new Map<number, string[]>();
  let cellsPerRound = 0;
  let biggest = { bytes: 0, who: '' };
  for (const size of options.sizes) {
    const here = [memcpyName];
    const memcpyNeed = 2 * size;
    if (memcpyNeed > biggest.bytes) biggest = { bytes: memcpyNeed, who: `memcpy at ${formatBytes(size)}` };
    for (const t of options.transports) {
      const limit = largest.get(t)!;
      const why = unavailable.get(t);
      const tooBig = limit > 0 && size > limit ? `a ${t} message can be at most ${formatCount(limit)} bytes here (the socket's send buffer)` : undefined;
      if (why || tooBig) {
        for (const mode of options.modes) {
          skipped.push({ transport: t, mode, messageBytes: size, status: why ? 'unavailable' : 'skipped', reason: why ?? tooBig! });
        }
        continue;
      }
      here.push(t);
      for (const mode of options.modes) {
        const need = native.ipcFootprint(addonTransport(t), mode, size);
        if (need > biggest.bytes) biggest = { bytes: need, who: `${t} ${mode} at ${formatBytes(size)}` };
      }
    }
    runnable.set(size, here);
    cellsPerRound += 1 + (here.length - 1) * options.modes.length;
  }
  if ([...runnable.values()].every((ts) => ts.length === 1)) {
    // nothing but memcpy would run: the transports asked for cannot work at the sizes asked for
    const reasons = [...new Set(skipped.map((s) => s.status === 'unavailable' ? `${s.transport} is unavailable: ${s.reason}` :
      `${s.transport} at ${formatBytes(s.messageBytes)}: ${s.reason}`))];
    throw new UserError(reasons.length === 1 ? reasons[0] : `nothing to run: ${reasons.join('; ')}`);
  }
  if (biggest.bytes > memory) {
    throw new UserError(`--sizes ${options.sizes.map(formatSize).join(',')}: ${biggest.who} needs ${formatBytes(biggest.bytes)} of memory; ` +
      `${formatBytes(memory)} is available (MemAvailable in /proc/meminfo)`);
  }
  return { options, runnable, skipped, cellsPerRound };
}

/** The cells of one round, in order: sizes ascending, the contenders rotated by the round so
 * that none always runs first (alternated rounds), and the modes likewise. */
export function roundCells(plan: IpcPlan, round: number): { transport: string; mode: IpcMode; messageBytes: number }[] {
  const cells: { transport: string; mode: IpcMode; messageBytes: number }[] = [];
  const modes = rotate(plan.options.modes, round);
  for (const size of plan.options.sizes) {
    for (const t of rotate(plan.runnable.get(size)!, round)) {
      if (t === memcpyName) cells.push({ transport: t, mode: 'throughput', messageBytes: size });
      else for (const mode of modes) cells.push({ transport: t, mode, messageBytes: size });
    }
  }
  return cells;
}

function rotate<T>(xs: readonly T[], by: number): T[] {
  return xs.map((_, i) => xs[(i + by) % xs.length]);
}
