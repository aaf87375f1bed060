// npm run bench:iops — the matrix: 1 GiB file, 4 KiB randread, O_DIRECT, 1 job, iolab
// and fio alternating (median of ROUNDS rounds) per engine, then the seed's testIOPS modes.
// Prints tables and writes bench-results/iops.json. BENCH_RUNTIME (s), BENCH_ROUNDS, BENCH_FILE
// and BENCH_SIZE override the defaults.
import { execa } from 'execa';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';
import { table } from '../src/format.js';
import { iolabArgv } from '../src/spawn-iolab.js';

const runtime = process.env.BENCH_RUNTIME ?? '5';
const rounds = process.env.BENCH_ROUNDS ?? '3';
const size = process.env.BENCH_SIZE ?? '1g';
const file = process.env.BENCH_FILE ?? join(tmpdir(), 'iolab-bench-1g.dat');

const configs = [
  { label: 'io_uring qd32', engine: 'io_uring', iodepth: 32, goal: 1.0, extra: [] as string[] },
  { label: 'io_uring qd32 fixedbufs+registerfiles', engine: 'io_uring', iodepth: 32, goal: undefined, extra: ['--fixedbufs', '--registerfiles'] },
  { label: 'libaio qd32', engine: 'libaio', iodepth: 32, goal: 0.95, extra: [] },
  { label: 'psync qd1', engine: 'psync', iodepth: 1, goal: 0.95, extra: [] },
  { label: 'posixaio qd32', engine: 'posixaio', iodepth: 32, goal: 0.95, extra: [] },
];
/** The seed program's own figures on this machine (rRD), from the issue. */
const seedFigures: Record<string, number> = { io_uring: 65_000, libaio: 36_000, posix_aio: 4_700, sync: 3_000 };

async function iolab(args: string[]): Promise<any> {
  const r = await execa(...iolabArgv(args), { reject: false, stderr: 'inherit' });
  if (r.exitCode !== 0) throw new Error(`iolab ${args.join(' ')} failed (exit ${r.exitCode})`);
  return JSON.parse(String(r.stdout));
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const started = new Date().toISOString();
process.stderr.write(`bench:iops: ${file} (${size}), 4k randread O_DIRECT, ${runtime}s per run, ${rounds} rounds\n`);

const vsFio: any[] = [];
for (const c of configs) {
  process.stderr.write(`  ${c.label} ...\n`);
  const out = await iolab(['bench', 'iops', '--filename', file, '--size', size, '--rw', 'randread', '--bs', '4k',
    '--direct=1', '--numjobs', '1', '--iodepth', String(c.iodepth), '--ioengine', c.engine, ...c.extra,
    '--runtime', runtime, '--time_based', '--vs-fio', '--repeat', rounds, '--json']);
  const s = out.vs_fio.engines[0];
  vsFio.push({ ...c, ...s, pass: c.goal === undefined || s.unavailable ? undefined : s.ratio >= c.goal });
}

const seed: { mode: string; engines: any[] }[] = [];
for (const mode of ['rRD', 'sRD', 'rWR', 'sWR']) {
  process.stderr.write(`  seed mode ${mode} ...\n`);
  seed.push({ mode, engines: await iolab(['bench', 'iops', file, `-m=${mode}`, '--runtime', runtime, '--json']) });
}

process.stdout.write(`\niolab vs fio (${vsFio[0]?.engine ? 'median of ' + rounds + ' rounds' : ''}, 4 KiB randread, O_DIRECT, 1 job, ${runtime}s runs)\n`);
process.stdout.write(table(['job', 'iolab IOPS', 'fio IOPS', 'iolab/fio', 'goal', 'iolab p99', 'fio p99'], vsFio.map((v) =>
  v.unavailable ? [v.label, `unavailable: ${v.unavailable}`] : [v.label, fmt(v.iolab_iops), fmt(v.fio_iops), v.ratio.toFixed(2),
    v.goal === undefined ? '-' : `>= ${v.goal.toFixed(2)} ${v.pass ? 'ok' : 'MISSED'}`,
    `${(v.iolab_clat_p99_ns / 1000).toFixed(0)}us`, `${(v.fio_clat_p99_ns / 1000).toFixed(0)}us`])));
process.stdout.write(`\nseed testIOPS modes (QD 64, 4 KiB, O_DIRECT, ${runtime}s; seed's own rRD figures beside)\n`);
const engines = ['sync', 'io_uring', 'posix_aio', 'libaio'];
process.stdout.write(table(['engine', ...seed.map((s) => s.mode), 'seed rRD'], engines.map((e) => [e,
  ...seed.map((s) => { const r = s.engines.find((x: any) => x.engine === e); return r?.iops !== undefined ? fmt(r.iops) : 'unavailable'; }),
  fmt(seedFigures[e])])));

mkdirSync(join(projectRoot, 'bench-results'), { recursive: true });
const path = join(projectRoot, 'bench-results/iops.json');
writeFileSync(path, JSON.stringify({ started, file, size, runtime_s: Number(runtime), rounds: Number(rounds), vs_fio: vsFio, seed, seed_reference_rRD: seedFigures }, null, 2) + '\n');
process.stdout.write(`\nwrote ${path}\n`);
