// `iolab bench iops`: fio's job options over the native engines, one row per engine, fio-shaped
// JSON, --vs-fio side by side, and the seed's testIOPS mode (`iolab bench iops <file> -m=rRD`).
import { Command, Option } from 'commander';
import { existsSync, statSync } from 'node:fs';
import { native, type BenchJob, type BenchResult } from '../native.js';
import { printJson, UserError } from '../cli-util.js';
import {
  checkJob, parseEngines, parseRw, resultIops, runJob, type RwMode,
} from './storage-job.js';
import { fioJob, resultHeader, resultRows } from './report.js';
import { formatCount, formatNs, median, table } from '../format.js';
import { fioVersion, runFio, type FioFigures } from './fio-runner.js';
import { durationOption, numberOption } from '../numbers.js';

interface Preset {
  rw?: RwMode;
  bs?: number;
  iodepth?: number;
  rwmixread?: number;
  direct?: boolean;
  ioengine?: string[];
}

/** The project notes' fio profiles. */
export const presets: Record<string, Preset> = {
  latency: { rw: 'randread', bs: 4096, iodepth: 1 },
  iops: { rw: 'randread', bs: 4096, iodepth: 32 },
  throughput: { rw: 'read', bs: 128 * 1024, iodepth: 32 },
  mixed: { rw: 'randrw', rwmixread: 70, bs: 4096, iodepth: 32 },
  bigwrite: { rw: 'write', bs: 1 << 20, iodepth: 16, direct: true, ioengine: ['libaio', 'psync'] },
};

const DEFAULT_SIZE = 256 * 2 ** 20;

function parseBool(value: string): boolean {
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  if (/^(0|false|no|off)$/i.test(value)) return false;
  throw new Error(`expected 0 or 1, got '${value}'`);
}

function boolOption(flags: string, description: string): Option {
  return new Option(flags, description).argParser((v: string) => {
    try {
      return parseBool(v);
    } catch (err) {
      throw new UserError(`${flags.split(' ')[0]}: ${(err as Error).message}`);
    }
  });
}

/** Seed mode names -> rw and the words the seed printed. */
const seedModes: Record<string, { rw: RwMode; words: string }> = {
  rRD: { rw: 'randread', words: 'random read' },
  sRD: { rw: 'read', words: 'sequential read' },
  rWR: { rw: 'randwrite', words: 'random write' },
  sWR: { rw: 'write', words: 'sequential write' },
};
/** The seed's four engines, in its order, with its labels. */
const seedEngines: [string, string][] = [['sync', 'sync'], ['io_uring', 'io_uring'], ['posix_aio', 'posixaio'], ['libaio', 'libaio']];

interface IopsOptions {
  filename?: string;
  ioengine?: string[];
  rw?: RwMode;
  rwmixread?: number;
  bs?: number;
  iodepth?: number;
  iodepth_batch?: number;  // --iodepth_batch_submit or --iodepth_batch
  numjobs?: number;
  size?: number;
  runtime?: number;
  time_based?: boolean;
  ramp_time?: number;
  number_ios?: number;
  direct?: boolean;
  invalidate?: boolean;
  fixedbufs?: boolean;
  registerfiles?: boolean;
  sqthread_poll?: boolean;
  verify?: boolean | string;
  force?: boolean;
  outputFormat?: string;
  json?: boolean;
  preset?: string;
  vsFio?: boolean;
  repeat?: number;
  mode?: string;
}

function isBenchInputError(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return err instanceof UserError || code === 'ERR_IOLAB_BENCH' || err instanceof TypeError || err instanceof RangeError;
}

function baseJob(opts: IopsOptions, filename: string): BenchJob {
  const preset = opts.preset ? presets[opts.preset] : {};
  const verify = opts.verify !== undefined && opts.verify !== false && opts.verify !== '0';
  return {
    filename,
    engine: '',
    rw: opts.rw ?? preset.rw ?? 'read',
    rwmixread: opts.rwmixread ?? preset.rwmixread ?? 50,
    bs: opts.bs ?? preset.bs ?? 4096,
    iodepth: opts.iodepth ?? preset.iodepth ?? 1,
    iodepthBatch: opts.iodepth_batch ?? 1,
    numjobs: opts.numjobs ?? 1,
    size: opts.size ?? DEFAULT_SIZE,
    runtimeMs: opts.runtime,
    timeBased: opts.time_based ?? false,
    rampMs: opts.ramp_time,
    numberIos: opts.number_ios,
    direct: opts.direct ?? preset.direct ?? false,
    invalidate: opts.invalidate ?? true,
    fixedbufs: opts.fixedbufs ?? false,
    registerfiles: opts.registerfiles ?? false,
    sqthreadPoll: opts.sqthread_poll ?? false,
    verify,
    force: opts.force ?? false,
  };
}

function describeJob(job: BenchJob): string {
  const time = job.runtimeMs ? ` runtime=${job.runtimeMs / 1000}s${job.timeBased ? ' time_based' : ''}` : '';
  const mix = job.rw === 'randrw' || job.rw === 'readwrite' ? ` rwmixread=${job.rwmixread}` : '';
  return `${job.rw}${mix} bs=${job.bs} iodepth=${job.iodepth} numjobs=${job.numjobs} ` +
    `size=${(job.size / 2 ** 20).toFixed(0)}MiB direct=${job.direct ? 1 : 0}${time}${job.verify ? ' verify' : ''}`;
}

async function runFioMode(opts: IopsOptions, json: boolean): Promise<void> {
  const filename = opts.filename;
  if (!filename) throw new UserError('--filename is required (iolab creates and lays it out when missing)');
  if (opts.preset && !presets[opts.preset]) {
    throw new UserError(`unknown preset '${opts.preset}' (known: ${Object.keys(presets).join(', ')})`);
  }
  const preset = opts.preset ? presets[opts.preset] : {};
  const engines = opts.ioengine ?? preset.ioengine ?? [...native.benchEngines];
  const base = baseJob(opts, filename);
  checkJob(base);
  if (opts.vsFio) return runVsFio(opts, base, engines, json);

  const results: { job: BenchJob; result?: BenchResult; error?: Error }[] = [];
  for (const engine of engines) {
    const job = { ...base, engine };
    try {
      results.push({ job, result: await runJob(job, { show: !json, label: engine }) });
    } catch (err) {
      if (isBenchInputError(err)) throw err;  // refused before any I/O: one line, nothing else
      results.push({ job, error: err as Error });
    }
  }
  if (json) {
    printJson({ 'fio version': 'iolab-0.1.0', jobs: results.map((r) => fioJob(r.job, r.result, r.error?.message)) });
  } else {
    const rows: string[][] = [];
    for (const { job, result, error } of results) {
      if (error) rows.push([job.engine, `error: ${error.message}`]);
      else if (result?.unavailable) rows.push([job.engine, `unavailable: ${result.unavailable}`]);
      else if (result) rows.push(...resultRows(job.engine, result, job.numjobs ?? 1));
    }
    process.stdout.write(`iolab bench iops: ${describeJob(base)} file=${filename}\n`);
    process.stdout.write(table(resultHeader, rows));
    const verified = results.reduce((s, r) => s + (r.result?.verifiedBlocks ?? 0), 0);
    if (base.verify && !results.some((r) => r.error)) {
      process.stdout.write(`verify: every block read matched its pattern` +
        (verified ? `; ${formatCount(verified)} written blocks read back and checked` : '') + '\n');
    }
  }
  const failed = results.find((r) => r.error);
  if (failed?.error) throw failed.error;
  // The table already says why each engine could not run; with none run, say so by the exit code.
  if (results.every((r) => r.result?.unavailable)) process.exitCode = 1;
}

async function runVsFio(opts: IopsOptions, base: BenchJob, engines: string[], json: boolean): Promise<void> {
  const version = await fioVersion();
  if (!version) throw new UserError('--vs-fio needs fio on PATH (apt-get install fio)');
  if (base.verify) throw new UserError('--vs-fio runs fio on the same file, which overwrites the verify pattern: drop --verify');
  const rounds = opts.repeat ?? 3;
  const per: Map<string, { iolab: BenchResult[]; fio: FioFigures[]; unavailable?: string }> = new Map();
  for (const e of engines) per.set(e, { iolab: [], fio: [] });
  for (let round = 0; round < rounds; round++) {
    for (const engine of engines) {
      const entry = per.get(engine)!;
      if (entry.unavailable) continue;
      const job = { ...base, engine };
      const ours = async () => {
        const r = await runJob(job, { show: !json, label: `${engine} iolab ${round + 1}/${rounds}` });
        if (r.unavailable) entry.unavailable = r.unavailable;
        else entry.iolab.push(r);
      };
      const theirs = async () => {
        if (!entry.unavailable) entry.fio.push(await runFio(job));
      };
      // the first run of a round lays the file out; later rounds alternate who goes first
      if (round % 2 === 0) {
        await ours();
        await theirs();
      } else {
        await theirs();
        await ours();
      }
    }
    if (base.rw !== 'read' && base.rw !== 'randread') native.benchMarkWritten(base.filename);
  }
  const summary = engines.map((engine) => {
    const e = per.get(engine)!;
    if (e.unavailable) return { engine, unavailable: e.unavailable };
    const iolabIops = median(e.iolab.map(resultIops));
    const fioIops = median(e.fio.map((f) => f.iops));
    return {
      engine,
      rounds: e.iolab.map((r, i) => ({ iolab_iops: resultIops(r), fio_iops: e.fio[i]?.iops })),
      iolab_iops: iolabIops,
      fio_iops: fioIops,
      ratio: fioIops > 0 ? iolabIops / fioIops : NaN,
      iolab_clat_p99_ns: median(e.iolab.map((r) => (r.read.ios ? r.read : r.write).clat.percentiles[12])),
      fio_clat_p99_ns: median(e.fio.map((f) => f.clatP99)),
    };
  });
  if (json) {
    const jobs = engines.map((engine) => {
      const e = per.get(engine)!;
      const mid = e.iolab.length ? [...e.iolab].sort((a, b) => resultIops(a) - resultIops(b))[e.iolab.length >> 1] : undefined;
      return fioJob({ ...base, engine }, e.unavailable ? { unavailable: e.unavailable } as BenchResult : mid);
    });
    printJson({ 'fio version': 'iolab-0.1.0', jobs, vs_fio: { fio: version, repeat: rounds, engines: summary } });
    return;
  }
  process.stdout.write(`iolab bench iops --vs-fio (${version}, median of ${rounds} rounds): ${describeJob(base)} file=${base.filename}\n`);
  const rows = summary.map((s) => 'unavailable' in s && s.unavailable ? [s.engine, `unavailable: ${s.unavailable}`] : [
    s.engine, formatCount(s.iolab_iops!), formatCount(s.fio_iops!), s.ratio!.toFixed(2),
    formatNs(s.iolab_clat_p99_ns!), formatNs(s.fio_clat_p99_ns!),
  ]);
  process.stdout.write(table(['engine', 'iolab IOPS', 'fio IOPS', 'iolab/fio', 'iolab clat p99', 'fio clat p99'], rows));
}

async function runSeedMode(file: string, opts: IopsOptions, json: boolean): Promise<void> {
  const key = (opts.mode ?? '').replace(/^=/, '');
  const mode = seedModes[key];
  if (!mode) throw new UserError(`unknown mode '${key}' (known: ${Object.keys(seedModes).join(', ')})`);
  const size = opts.size ?? (existsSync(file) && statSync(file).isFile() && statSync(file).size >= 4096 ? statSync(file).size : 2 ** 30);
  const base: BenchJob = {
    filename: file, engine: '', rw: mode.rw, bs: opts.bs ?? 4096, iodepth: opts.iodepth ?? 64, numjobs: 1,
    size, runtimeMs: opts.runtime ?? 10_000, timeBased: true, direct: opts.direct ?? true, invalidate: true,
    force: opts.force ?? false,
  };
  checkJob(base);
  const out: { engine: string; mode: string; bs: number; iops?: number; unavailable?: string }[] = [];
  for (const [label, engine] of seedEngines) {
    const r = await runJob({ ...base, engine }, { show: !json, label });
    const line = r.unavailable ? { engine: label, mode: key, bs: base.bs, unavailable: r.unavailable } :
      { engine: label, mode: key, bs: base.bs, iops: Math.round(resultIops(r)) };
    out.push(line);
    if (!json) {
      process.stdout.write(line.unavailable ? `${label}: ${mode.words} unavailable: ${line.unavailable}\n` :
        `${label}: ${mode.words} operates with bs ${base.bs / 1024} KB, IOPS: ${line.iops} /seconds\n`);
    }
  }
  if (json) printJson(out);
}

export function iopsCommand(): Command {
  const size = numberOption({ min: 1, size: true });
  return new Command('iops')
    .description('storage IOPS/latency benchmark with fio\'s job options: sync, psync, io_uring, libaio, posixaio, mmap')
    .argument('[file]', 'seed mode: the file to test with -m (or the same as --filename)')
    .option('--filename <path>', 'file (or block device) to test; created and laid out when missing or short')
    .option('--ioengine <list>', `engine, comma list or 'all' (${native.benchEngines.join(', ')})`, parseEngines)
    .option('--rw <mode>', 'read, write, randread, randwrite, randrw, readwrite (default read)', parseRw)
    .option('--rwmixread <pct>', 'percent of reads in randrw/readwrite (default 50)', numberOption({ min: 0, max: 100 }))
    .option('--bs <size>', 'block size, e.g. 4k (default 4k)', size)
    .option('--iodepth <n>', 'I/Os in flight per job (default 1)', numberOption({ min: 1 }))
    .option('--iodepth_batch_submit, --iodepth_batch <n>', 'commit after this many queued I/Os (default 1, as fio)', numberOption({ min: 1 }))
    .option('--numjobs <n>', 'threads, each running the job on the file (default 1)', numberOption({ min: 1 }))
    .option('--size <size>', 'bytes of the file each job addresses (default 256M)', size)
    .option('--runtime <time>', 'stop after this long (10, 500ms, 2s); without --time_based also bounded by --size', durationOption())
    .option('--time_based', 'run for --runtime even if --size is done (wraps around)')
    .option('--ramp_time <time>', 'run this long before recording', durationOption({ zero: true }))
    .option('--number_ios <n>', 'stop after this many I/Os per job', numberOption({ min: 1 }))
    .addOption(boolOption('--direct [0|1]', 'O_DIRECT (bypass the page cache); default 0').preset(true))
    .addOption(boolOption('--invalidate [0|1]', 'drop the file\'s cached pages before the job; default 1').preset(true))
    .option('--fixedbufs', 'io_uring: registered buffers (READ_FIXED/WRITE_FIXED)')
    .option('--registerfiles', 'io_uring: registered file (IOSQE_FIXED_FILE)')
    .option('--sqthread_poll', 'io_uring: kernel SQ polling thread')
    .option('--verify [kind]', 'writes carry a pattern from offset+seed; reads check every block (any kind: the same check)')
    .option('--force', 'allow writing into a file iolab did not create')
    .addOption(new Option('--output-format <format>', 'normal or json').choices(['normal', 'json']))
    .option('--json', 'same as --output-format json')
    .addOption(new Option('--preset <name>', 'the notes\' fio profiles; explicit options win').choices(Object.keys(presets)))
    .option('--vs-fio', 'run the same job in fio after iolab\'s, alternating, and print the ratio iolab/fio')
    .option('--repeat <n>', 'rounds for --vs-fio (median is reported; default 3)', numberOption({ min: 1 }))
    .option('-m, --mode <mode>', 'seed mode (testIOPS): rRD, sRD, rWR or sWR with [file]; QD 64, 4 KiB, O_DIRECT, 10 s')
    .addHelpText('after', `
Examples:
  iolab bench iops --filename /tmp/t.dat --size 1g --rw randread --bs 4k --iodepth 32 --direct=1 \\
      --runtime 5 --time_based --ioengine io_uring,libaio
  iolab bench iops --filename /tmp/t.dat --preset iops --direct=1 --runtime 5 --vs-fio --repeat 3
  iolab bench iops /tmp/t.dat -m=rRD --runtime 2`)
    .action(async (file: string | undefined, opts: IopsOptions) => {
      const json = opts.json === true || opts.outputFormat === 'json';
      if (opts.mode !== undefined) {
        const target = file ?? opts.filename;
        if (!target) throw new UserError('seed mode needs the file: iolab bench iops <file> -m=rRD');
        return runSeedMode(target, opts, json);
      }
      if (file !== undefined) {
        if (opts.filename !== undefined && opts.filename !== file) throw new UserError('give the file once: either [file] or --filename');
        opts.filename = file;
      }
      return runFioMode(opts, json);
    });
}
