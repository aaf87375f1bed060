// The bpftrace program `iolab trace` runs: the io_uring tracepoints (per request: submit to
// complete, io-wq or not, CQ overflow), the syscall tracepoints of the other engines, and the
// addon's USDT probes for the user-space side of a Ring op. Everything is filtered to the
// traced process and the processes it forks (its threads and io-wq workers share its tgid).
import { bucketStatements } from './latency-buckets.js';
import { usdtProvider } from './usdt.js';

/** What the running kernel and addon offer, found with `bpftrace -l` (see probes.ts). */
export interface ProbeSet {
  /** io_uring_submit_req (6.4+) or io_uring_submit_sqe; undefined without io_uring tracepoints. */
  submitTracepoint?: string;
  /** The io_uring tracepoints carry the request pointer (5.x kernels before 5.16 only user_data). */
  hasRequestPointer: boolean;
  /** The submit tracepoint carries op_str (the opcode's name). */
  hasOpName: boolean;
  hasAsyncWork: boolean;
  hasOverflow: boolean;
  /** raw_syscalls:sys_enter/sys_exit exist and this architecture's numbers are known. */
  rawSyscalls: boolean;
  /** The addon, when its USDT probes are listed. */
  usdtBinary?: string;
  /** Ring probe names present in the addon. */
  usdtNames: string[];
}

/** The calls the non-io_uring engines make, in the order of the summary table. */
export const tracedSyscalls = [
  'pread64', 'pwrite64', 'preadv', 'pwritev', 'preadv2', 'pwritev2', 'readv', 'writev', 'io_submit', 'io_getevents',
] as const;

/** Syscall numbers (x86_64's own table; arm64 uses the generic one), io_uring_enter last. The
 * two raw_syscalls tracepoints with a filter on the number cost far less to attach and detach
 * than two tracepoints per call. */
const syscallNumbers: Record<string, number[]> = {
  x64: [17, 18, 295, 296, 327, 328, 19, 20, 209, 208, 426],
  arm64: [67, 68, 69, 70, 286, 287, 65, 66, 2, 4, 426],
};

/** The syscall numbers of tracedSyscalls and io_uring_enter on this architecture. */
export function syscallNumbersHere(arch = process.arch): number[] | undefined {
  return syscallNumbers[arch];
}

/** Stages of a Ring op, from the USDT probes and the tracepoints between them. */
export const ringStages = ['queue-submit', 'submit-kernel', 'kernel', 'kernel-reap', 'reap-settle', 'total'] as const;

export interface ProgramTarget {
  /** The traced command's pid (stopped until bpftrace has attached). */
  pid: number;
  /** iolab trace's own pid: when it exits, for whatever reason, bpftrace exits too. */
  tracerPid: number;
}

/** Statements that count $lat (ns) into @map[key..., bucket]. */
function countLatency(map: string, keys: string): string {
  return `${bucketStatements()}\n  ${map}[${keys}, $b] = count();`;
}

/** The Ring's probes are all there (and bpftrace can attach to them): stages are measured. */
function tracesRingOps(p: ProbeSet): boolean {
  return p.usdtBinary !== undefined && ['ring_queue', 'ring_submit', 'ring_complete', 'ring_settle'].every((n) => p.usdtNames.includes(n));
}

function ioUringSection(p: ProbeSet): string {
  if (!p.submitTracepoint) return '';
  // Requests are matched by their kernel pointer, or by ring and user_data where the
  // tracepoints lack it; a request finishes with its last CQE (no IORING_CQE_F_MORE). The CQEs
  // of a multishot request before its last are posted without the pointer (req is NULL): they
  // are found through the ring and user_data of its submission (@ud_req).
  const key = p.hasRequestPointer ? '$req' : 'args->ctx, args->user_data';
  const reqOf = p.hasRequestPointer ? '$req = (uint64)args->req;' : '';
  const ring = p.submitTracepoint;
  const ringOps = tracesRingOps(p);
  const lines = [
    `tracepoint:io_uring:${ring} /@procs[pid]/ {
  ${reqOf}
  ${p.hasRequestPointer ? '@ud_req[args->ctx, args->user_data] = $req;' : ''}
  @req_start[${key}] = nsecs;
  @req_op[${key}] = args->opcode;
  @req_tid[${key}] = tid;
  @req_enter[${key}] = @enter[tid];
  @req_pid[${key}] = pid;
  @op_count[args->opcode] = count();
  ${p.hasOpName ? '@op_name[args->opcode] = str(args->op_str);' : ''}
  @rings[args->ctx] = 1;
  ${ringOps ? `if (@u_queue[pid, args->user_data]) {
    @u_ksubmit[pid, args->user_data] = nsecs;
    if (@u_submit[tid]) {
      $lat = @u_submit[tid] - @u_queue[pid, args->user_data];
      ${countLatency('@u_lat', '0, args->opcode')}
      $lat = nsecs - @u_submit[tid];
      ${countLatency('@u_lat', '1, args->opcode')}
    }
  }` : ''}
}`,
    `tracepoint:io_uring:io_uring_complete {
  ${reqOf}
  ${p.hasRequestPointer ? 'if ($req == 0) { $req = @ud_req[args->ctx, args->user_data]; }' : ''}
  if (@req_start[${key}] == 0) { return; }
  $op = @req_op[${key}];
  @op_cqes[$op] = count();
  if (@req_seen[${key}] == 0) {
    @req_seen[${key}] = 1;
    $lat = nsecs - @req_start[${key}];
    ${countLatency('@op_lat', '$op')}
    if (tid == @req_tid[${key}] && @enter[tid] == @req_enter[${key}]) { @op_inline[$op] = count(); }
    ${ringOps ? `$upid = @req_pid[${key}];
    if (@u_ksubmit[$upid, args->user_data]) {
      $lat = nsecs - @u_ksubmit[$upid, args->user_data];
      ${countLatency('@u_lat', '2, $op')}
      @u_kcomplete[$upid, args->user_data] = nsecs;
    }` : ''}
  }
  if ((args->cflags & 2) == 0) {
    delete(@req_start[${key}]); delete(@req_op[${key}]); delete(@req_tid[${key}]);
    delete(@req_enter[${key}]); delete(@req_seen[${key}]); delete(@req_pid[${key}]);
    ${p.hasRequestPointer ? 'delete(@ud_req[args->ctx, args->user_data]);' : ''}
  }
}`,
  ];
  if (p.hasAsyncWork) {
    lines.push(`tracepoint:io_uring:io_uring_queue_async_work { ${reqOf} if (@req_start[${key}]) { @op_async[args->opcode] = count(); } }`);
  }
  if (p.hasOverflow) {
    lines.push(`tracepoint:io_uring:io_uring_cqe_overflow /@rings[args->ctx]/ { @overflow = count(); }`);
  }
  return lines.join('\n');
}

/** BEGIN's statements that fill @sc_index. */
function syscallIndex(p: ProbeSet): string {
  const numbers = syscallNumbersHere();
  if (!p.rawSyscalls || !numbers) return '';
  return tracedSyscalls.map((_, i) => `@sc_index[${numbers[i]}] = ${i + 1};`).join(' ');
}

/** One enter and one exit probe for every call: io_uring_enter brackets (for `inline`), the
 * others are timed. @sc_index maps a syscall number to its row + 1. */
function syscallSection(p: ProbeSet): string {
  const numbers = syscallNumbersHere();
  if (!p.rawSyscalls || !numbers) return '';
  const enterNr = numbers[numbers.length - 1];
  return `tracepoint:raw_syscalls:sys_enter /@procs[pid]/ {
  if (args->id == ${enterNr}) { @enter[tid] = nsecs; }
  $i = @sc_index[args->id];
  if ($i) { @sc_start[tid] = nsecs; @sc_row[tid] = $i - 1; }
}
tracepoint:raw_syscalls:sys_exit /@procs[pid]/ {
  if (args->id == ${enterNr}) { delete(@enter[tid]); }
  if (@sc_start[tid]) {
    $lat = nsecs - @sc_start[tid];
    $row = @sc_row[tid];
    delete(@sc_start[tid]); delete(@sc_row[tid]);
    ${countLatency('@sc_lat', '$row')}
    @sc_count[$row] = count();
    @sc_threads[$row, tid] = 1;
    if (args->ret < 0) { @sc_errors[$row] = count(); } else { @sc_sum[$row] = sum(args->ret); }
  }
}`;
}

/** One probe per USDT name: each counts itself; the Ring's also time the stages. */
function usdtSection(p: ProbeSet): string {
  if (!p.usdtBinary || p.usdtNames.length === 0) return '';
  const stages = tracesRingOps(p) && p.submitTracepoint !== undefined;
  const ringBodies: Record<string, string> = {
    ring_queue: '@u_queue[pid, arg0] = nsecs; @u_op[pid, arg0] = arg1;',
    ring_submit: '@u_submit[tid] = nsecs;',
    ring_complete: `if (@u_kcomplete[pid, arg0]) {
    $lat = nsecs - @u_kcomplete[pid, arg0];
    ${countLatency('@u_lat', '3, @u_op[pid, arg0]')}
    @u_reap[pid, arg0] = nsecs;
  }`,
    ring_settle: `if (@u_queue[pid, arg0]) {
    $op = @u_op[pid, arg0];
    if (@u_reap[pid, arg0]) {
      $lat = nsecs - @u_reap[pid, arg0];
      ${countLatency('@u_lat', '4, $op')}
    }
    $lat = nsecs - @u_queue[pid, arg0];
    ${countLatency('@u_lat', '5, $op')}
    delete(@u_queue[pid, arg0]); delete(@u_op[pid, arg0]); delete(@u_ksubmit[pid, arg0]); delete(@u_kcomplete[pid, arg0]); delete(@u_reap[pid, arg0]);
  }`,
  };
  return p.usdtNames.map((name) => `usdt:${p.usdtBinary}:${usdtProvider}:${name} /@procs[pid]/ {
  @usdt[probe] = count();
  ${stages ? ringBodies[name] ?? '' : ''}
}`).join('\n');
}

/** Maps that hold requests in flight: cleared at the end so only the results are printed. */
const scratchMaps = ['@procs', '@enter', '@sc_index', '@sc_row', '@ud_req', '@req_start', '@req_op', '@req_tid', '@req_enter', '@req_seen', '@req_pid',
  '@rings', '@sc_start', '@u_queue', '@u_op', '@u_submit', '@u_ksubmit', '@u_kcomplete', '@u_reap'];

export function traceProgram(target: ProgramTarget, probes: ProbeSet): string {
  const uses = (map: string) => (program: string) => program.includes(`${map}[`);
  const body = [ioUringSection(probes), syscallSection(probes), usdtSection(probes)].filter((s) => s !== '').join('\n');
  const head = `BEGIN { @procs[${target.pid}] = 1; ${syscallIndex(probes)} }
tracepoint:sched:sched_process_fork /@procs[pid]/ { @procs[args->child_pid] = 1; }
tracepoint:sched:sched_process_exit /tid == ${target.tracerPid}/ { exit(); }`;
  const program = `${head}\n${body}\n`;
  const clears = scratchMaps.filter((m) => uses(m)(program)).map((m) => `clear(${m});`).join(' ');
  return `${program}END { ${clears} }\n`;
}
