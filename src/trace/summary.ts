// bpftrace's maps (its `-f json` output) -> the trace summary: per io_uring opcode, per
// syscall, per USDT probe and per Ring stage; and the tables a user reads.
import { formatCount, formatNs, table } from '../format.js';
import { ringStages, tracedSyscalls } from './bpf-program.js';
import { bucketPercentile, totalCount, type Buckets } from './latency-buckets.js';

export interface OpRow {
  opcode: string;
  count: number;
  /** Completed within the io_uring_enter call that submitted it. */
  inline: number;
  /** Handed to an io-wq worker (io_uring_queue_async_work). */
  async: number;
  /** CQEs posted (more than count for multishot requests). */
  cqes: number;
  p50Ns: number;
  p99Ns: number;
  p999Ns: number;
}

export interface SyscallRow {
  syscall: string;
  count: number;
  errors: number;
  /** Threads that made the call (the POSIX AIO engine's helper threads show here). */
  threads: number;
  /** Bytes moved (read/write calls) or iocbs/events (io_submit/io_getevents): the sum of results. */
  resultSum: number;
  p50Ns: number;
  p99Ns: number;
  p999Ns: number;
}

export interface UsdtRow { probe: string; count: number }

export interface RingStageRow { opcode: string; stage: string; count: number; p50Ns: number; p99Ns: number; p999Ns: number }

export interface TraceSummary {
  ops: OpRow[];
  syscalls: SyscallRow[];
  usdt: UsdtRow[];
  ringStages: RingStageRow[];
  cqOverflows: number;
}

/** The opcode names of <linux/io_uring.h>, for kernels whose tracepoints lack op_str. */
const opcodeNames = ['NOP', 'READV', 'WRITEV', 'FSYNC', 'READ_FIXED', 'WRITE_FIXED', 'POLL_ADD', 'POLL_REMOVE',
  'SYNC_FILE_RANGE', 'SENDMSG', 'RECVMSG', 'TIMEOUT', 'TIMEOUT_REMOVE', 'ACCEPT', 'ASYNC_CANCEL', 'LINK_TIMEOUT',
  'CONNECT', 'FALLOCATE', 'OPENAT', 'CLOSE', 'FILES_UPDATE', 'STATX', 'READ', 'WRITE', 'FADVISE', 'MADVISE', 'SEND',
  'RECV', 'OPENAT2', 'EPOLL_CTL', 'SPLICE', 'PROVIDE_BUFFERS', 'REMOVE_BUFFERS', 'TEE', 'SHUTDOWN', 'RENAMEAT',
  'UNLINKAT', 'MKDIRAT', 'SYMLINKAT', 'LINKAT', 'MSG_RING', 'FSETXATTR', 'SETXATTR', 'FGETXATTR', 'GETXATTR',
  'SOCKET', 'URING_CMD', 'SEND_ZC', 'SENDMSG_ZC', 'READ_MULTISHOT', 'WAITID', 'FUTEX_WAIT', 'FUTEX_WAKE',
  'FUTEX_WAITV', 'FIXED_FD_INSTALL', 'FTRUNCATE', 'BIND', 'LISTEN'];

type MapData = Record<string, unknown>;

/** The maps printed by bpftrace -f json: name -> value (a number, or key -> value). */
export function collectMaps(lines: string[]): Map<string, MapData | number> {
  const maps = new Map<string, MapData | number>();
  for (const line of lines) {
    if (!line.startsWith('{')) continue;
    let event: { type?: string; data?: Record<string, unknown> };
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    if (event.type !== 'map' || !event.data) continue;
    for (const [name, value] of Object.entries(event.data)) maps.set(name, value as MapData | number);
  }
  return maps;
}

function entries(maps: Map<string, MapData | number>, name: string): [number[], number][] {
  const m = maps.get(name);
  if (m === undefined || typeof m === 'number') return [];
  return Object.entries(m).map(([k, v]) => [k.split(',').map(Number), Number(v)]);
}

function perKey(maps: Map<string, MapData | number>, name: string): Map<number, number> {
  return new Map(entries(maps, name).map(([k, v]) => [k[0], v]));
}

/** @name[k..., bucket] -> buckets per joined key prefix. */
function bucketsBy(maps: Map<string, MapData | number>, name: string): Map<string, Buckets> {
  const out = new Map<string, Buckets>();
  for (const [k, v] of entries(maps, name)) {
    const id = k.slice(0, -1).join(',');
    const b = out.get(id) ?? new Map<number, number>();
    b.set(k[k.length - 1], (b.get(k[k.length - 1]) ?? 0) + v);
    out.set(id, b);
  }
  return out;
}

function percentiles(b: Buckets | undefined) {
  const of = (p: number) => (b ? bucketPercentile(b, p) : NaN);
  return { p50Ns: of(50), p99Ns: of(99), p999Ns: of(99.9) };
}

export function summarize(maps: Map<string, MapData | number>): TraceSummary {
  const names = new Map(Object.entries((maps.get('@op_name') ?? {}) as MapData).map(([k, v]) => [Number(k), String(v)]));
  const opName = (n: number) => names.get(n) ?? opcodeNames[n] ?? `OP_${n}`;
  const inline = perKey(maps, '@op_inline');
  const async = perKey(maps, '@op_async');
  const cqes = perKey(maps, '@op_cqes');
  const opLat = bucketsBy(maps, '@op_lat');
  const ops = [...perKey(maps, '@op_count')].sort(([a], [b]) => a - b).map(([op, count]) => ({
    opcode: opName(op), count, inline: inline.get(op) ?? 0, async: async.get(op) ?? 0, cqes: cqes.get(op) ?? 0,
    ...percentiles(opLat.get(String(op))),
  }));

  const threads = new Map<number, number>();
  for (const [k] of entries(maps, '@sc_threads')) threads.set(k[0], (threads.get(k[0]) ?? 0) + 1);
  const errors = perKey(maps, '@sc_errors');
  const sums = perKey(maps, '@sc_sum');
  const scLat = bucketsBy(maps, '@sc_lat');
  const syscalls = [...perKey(maps, '@sc_count')].sort(([a], [b]) => a - b).map(([i, count]) => ({
    syscall: tracedSyscalls[i] ?? `syscall_${i}`, count, errors: errors.get(i) ?? 0, threads: threads.get(i) ?? 0,
    resultSum: sums.get(i) ?? 0, ...percentiles(scLat.get(String(i))),
  }));

  const usdtMap = (maps.get('@usdt') ?? {}) as MapData;
  const usdt = Object.entries(usdtMap).map(([probe, count]) => ({ probe: probe.slice(probe.lastIndexOf(':') + 1), count: Number(count) }))
    .sort((a, b) => a.probe.localeCompare(b.probe));

  const stageRows: RingStageRow[] = [];
  for (const [id, b] of [...bucketsBy(maps, '@u_lat')].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))) {
    const [stage, op] = id.split(',').map(Number);
    stageRows.push({ opcode: opName(op), stage: ringStages[stage] ?? String(stage), count: totalCount(b), ...percentiles(b) });
  }
  stageRows.sort((a, b) => a.opcode.localeCompare(b.opcode) || ringStages.indexOf(a.stage as never) - ringStages.indexOf(b.stage as never));
  const overflow = maps.get('@overflow');
  return { ops, syscalls, usdt, ringStages: stageRows, cqOverflows: typeof overflow === 'number' ? overflow : 0 };
}

/** JSON numbers: NaN (no samples) becomes null. */
export function summaryJson(s: TraceSummary): unknown {
  return JSON.parse(JSON.stringify(s, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v)));
}

const resultWord: Record<string, string> = { io_submit: 'iocbs', io_getevents: 'events' };

export function formatSummary(s: TraceSummary): string {
  const out: string[] = [];
  if (s.ops.length > 0) {
    out.push('io_uring requests (kernel: submit to complete; inline: completed within the submitting io_uring_enter; io-wq: went to a worker)');
    out.push(table(['opcode', 'count', 'inline', 'io-wq', 'CQEs', 'p50', 'p99', 'p99.9'], s.ops.map((o) => [
      o.opcode, formatCount(o.count), formatCount(o.inline), formatCount(o.async), formatCount(o.cqes),
      formatNs(o.p50Ns), formatNs(o.p99Ns), formatNs(o.p999Ns)])).trimEnd());
    out.push(`CQ overflows: ${formatCount(s.cqOverflows)}`);
  } else {
    out.push('io_uring requests: none');
  }
  if (s.syscalls.length > 0) {
    out.push('', 'syscalls (enter to exit)');
    out.push(table(['call', 'count', 'errors', 'threads', 'result sum', 'p50', 'p99', 'p99.9'], s.syscalls.map((c) => [
      c.syscall, formatCount(c.count), formatCount(c.errors), formatCount(c.threads),
      `${formatCount(c.resultSum)} ${resultWord[c.syscall] ?? 'bytes'}`, formatNs(c.p50Ns), formatNs(c.p99Ns), formatNs(c.p999Ns)])).trimEnd());
  } else {
    out.push('', 'syscalls (pread/pwrite/preadv/pwritev/readv/writev/io_submit/io_getevents): none');
  }
  if (s.ringStages.length > 0) {
    out.push('', 'Ring ops: where a Promise\'s time goes (queue-submit: waiting for the loop turn\'s submit; submit-kernel: io_uring_enter to the kernel\'s submit; kernel: submit to complete; kernel-reap: CQE to the JS thread; reap-settle: resolving the Promise)');
    out.push(table(['opcode', 'stage', 'count', 'p50', 'p99', 'p99.9'], s.ringStages.map((r) => [
      r.opcode, r.stage, formatCount(r.count), formatNs(r.p50Ns), formatNs(r.p99Ns), formatNs(r.p999Ns)])).trimEnd());
  }
  if (s.usdt.length > 0) {
    out.push('', `USDT probes fired: ${s.usdt.map((u) => `${u.probe} ${formatCount(u.count)}`).join(', ')}`);
  }
  return out.join('\n') + '\n';
}
