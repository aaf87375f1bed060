// npm run bench:iops — iolab beside fio in the same run, median of ROUNDS alternated rounds:
//  - the O_DIRECT group: 1 GiB file, 4 KiB randread, 1 job, per engine (the device is the limit);
//  - the CPU-bound group: the same file buffered and cached (direct=0, invalidate=0), and a file
//    on tmpfs, where the CPU is the limit: iolab should do >= fio's IOPS at <= fio's CPU per I/O;
//  - then testIOPS mode (the ebpf-io_uring benchmark) for its four rw modes.
// Prints tables and writes bench-results/iops.json. BENCH_RUNTIME (s), BENCH_ROUNDS, BENCH_FILE,
// BENCH_SIZE and BENCH_TMPFS_FILE override the defaults.
import { execa } from 'execa';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../../src/native.js';
import { table } from '../../src/format.js';
import { iolabArgv } from '../../src/spawn-iolab.js';

const runtime = process.env.BENCH_RUNTIME ?? '5';
const rounds = process.env.BENCH_ROUNDS ?? '3';
const size = process.env.BENCH_SIZE ?? '1g';
const file = process.env.BENCH_FILE ?? join(tmpdir(), 'iolab-bench-1g.dat');
const tmpfsFile = process.env.BENCH_TMPFS_FILE ?? `/dev/shm/iolab-bench-${process.pid}.dat`;

interface Config {
  label: string;
  engine: string;
  iodepth: number;
  goal?: number;
  /** CPU-bound: iolab's CPU per I/O should be <= fio's. */
  cpuGoal?: boolean;
  extra: string[];
  file?: string;
  size?: string;
}

const direct: Config[] = [
  { label: 'io_uring qd32', engine: 'io_uring', iodepth: 32, goal: 1.0, extra: [] },
  { label: 'io_uring qd32 fixedbufs+registerfiles', engine: 'io_uring', iodepth: 32, extra: ['--fixedbufs', '--registerfiles'] },
  { label: 'libaio qd32', engine: 'libaio', iodepth: 32, goal: 0.95, extra: [] },
  { label: 'psync qd1', engine: 'psync', iodepth: 1, goal: 0.95, extra: [] },
  { label: 'posixaio qd32', engine: 'posixaio', iodepth: 32, goal: 0.95, extra: [] },
].map((c) => ({ ...c, extra: ['--direct=1', ...c.extra] }));

const cached = ['--direct=0', '--invalidate=0'];
const cpuBound: Config[] = [
  { label: 'cached io_uring qd32', engine: 'io_uring', iodepth: 32, goal: 1.0, cpuGoal: true, extra: cached },
  { label: 'cached libaio qd32', engine: 'libaio', iodepth: 32, goal: 1.0, cpuGoal: true, extra: cached },
  { label: 'cached psync qd1', engine: 'psync', iodepth: 1, goal: 1.0, cpuGoal: true, extra: cached },
  { label: 'tmpfs io_uring qd32', engine: 'io_uring', iodepth: 32, goal: 1.0, cpuGoal: true, extra: cached, file: tmpfsFile, size: '256m' },
  { label: 'tmpfs psync qd1', engine: 'psync', iodepth: 1, goal: 1.0, cpuGoal: true, extra: cached, file: tmpfsFile, size: '256m' },
];

async function iolab(args: string[]): Promise<any> {
  const r = await execa(...iolabArgv(args), { reject: false, stderr: 'inherit' });
  if (r.exitCode !== 0) throw new Error(`iolab ${args.join(' ')} failed (exit ${r.exitCode})`);
  return JSON.parse(String(r.stdout));
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const started = new Date().toISOString();
process.stderr.write(`bench:iops: ${file} (${size}) and ${tmpfsFile}, 4k randread, ${runtime}s per run, ${rounds} rounds\n`);

async function vsFio(configs: Config[]) {
  const out: any[] = [];
  for (const c of configs) {
    process.stderr.write(`  ${c.label} ...\n`);
    const doc = await iolab(['bench', 'iops', '--filename', c.file ?? file, '--size', c.size ?? size, '--rw', 'randread',
      '--bs', '4k', '--numjobs', '1', '--iodepth', String(c.iodepth), '--ioengine', c.engine, ...c.extra,
      '--runtime', runtime, '--time_based', '--vs-fio', '--repeat', rounds, '--json']);
    const s = doc.vs_fio.engines[0];
    const pass = c.goal === undefined || s.unavailable ? undefined :
      s.ratio >= c.goal && (!c.cpuGoal || s.cpu_ratio <= 1.0);
    out.push({ ...c, ...s, pass, machine: doc.machine });
  }
  return out;
}

function printGroup(title: string, rows: any[]) {
  process.stdout.write(`\n${title}\n`);
  process.stdout.write(table(['job', 'iolab IOPS', 'fio IOPS', 'IOPS iolab/fio', 'iolab CPU/IO', 'fio CPU/IO', 'CPU iolab/fio',
    'goal', 'iolab p99', 'fio p99'], rows.map((v) => v.unavailable ? [v.label, `unavailable: ${v.unavailable}`] : [
    v.label, fmt(v.iolab_iops), fmt(v.fio_iops), v.ratio.toFixed(2), `${v.iolab_cpu_us_per_io.toFixed(2)}us`,
    `${v.fio_cpu_us_per_io.toFixed(2)}us`, v.cpu_ratio.toFixed(2),
    v.goal === undefined ? '-' : `${v.cpuGoal ? `>= ${v.goal.toFixed(2)}, CPU <= 1.00` : `>= ${v.goal.toFixed(2)}`} ${v.pass ? 'ok' : 'MISSED'}`,
    `${(v.iolab_clat_p99_ns / 1000).toFixed(0)}us`, `${(v.fio_clat_p99_ns / 1000).toFixed(0)}us`])));
}

const directRows = await vsFio(direct);
// the cached jobs read the page cache from the first round on: one buffered pass fills it
await iolab(['bench', 'iops', '--filename', file, '--size', size, '--rw', 'read', '--bs', '1m', '--invalidate=0',
  '--ioengine', 'psync', '--json']);
let cpuRows: any[];
try {
  cpuRows = await vsFio(cpuBound);
} finally {
  rmSync(tmpfsFile, { force: true });
}

const modes: { mode: string; engines: any[] }[] = [];
for (const mode of ['rRD', 'sRD', 'rWR', 'sWR']) {
  process.stderr.write(`  testIOPS mode ${mode} ...\n`);
  modes.push({ mode, engines: (await iolab(['bench', 'iops', file, `-m=${mode}`, '--runtime', runtime, '--json'])).engines });
}

printGroup(`O_DIRECT: iolab vs fio (median of ${rounds} rounds, 4 KiB randread, 1 job, ${runtime}s runs)`, directRows);
printGroup(`CPU-bound: buffered, cached (invalidate=0), and tmpfs (median of ${rounds} rounds, 4 KiB randread, 1 job, ${runtime}s runs)`, cpuRows);
process.stdout.write(`\ntestIOPS mode of the ebpf-io_uring benchmark (QD 64, 4 KiB, O_DIRECT, ${runtime}s)\n`);
const engines = ['sync', 'io_uring', 'posixaio', 'libaio'];
process.stdout.write(table(['engine', ...modes.map((s) => s.mode)], engines.map((e) => [e,
  ...modes.map((s) => { const r = s.engines.find((x: any) => x.engine === e); return r?.iops !== undefined ? fmt(r.iops) : 'unavailable'; })])));

mkdirSync(join(projectRoot, 'bench-results'), { recursive: true });
const path = join(projectRoot, 'bench-results/iops.json');
writeFileSync(path, JSON.stringify({
  started, file, size, runtime_s: Number(runtime), rounds: Number(rounds), machine: directRows[0]?.machine,
  command: ['npm', 'run', 'bench:iops'], vs_fio: directRows, cpu_bound: cpuRows, testiops: modes,
}, null, 2) + '\n');
process.stdout.write(`\nwrote ${path}\n`);
