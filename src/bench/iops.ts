// `iolab bench iops`: fio's job options over the native engines (one row per engine, or per
// engine and sweep point), fio's JSON, --vs-fio side by side, and testIOPS mode (the
// ebpf-io_uring benchmark's `-m=rRD` runs). Options of the engines' own tables come from C.
import { Command, Option } from 'commander';
import { UserError } from '../cli-util.js';
import { boolOption, durationOption, numberOption } from '../numbers.js';
import { checkDepth, ENGINES, engineOptionFlags, engineOptionsFrom, MAX_IODEPTH, parseEngines } from './engines.js';
import { parseRw, type RwMode } from './storage-job.js';
import { parseSweep, type SweepAxis } from './sweep.js';
import { runIops } from './iops-run.js';
import { runVsFio } from './vs-fio.js';
import { checkedJobs, type IopsRun } from './iops-plan.js';
import { runTestIops } from './testiops.js';
import type { BenchJob } from '../native.js';

interface Preset {
  rw?: RwMode;
  bs?: number;
  iodepth?: number;
  rwmixread?: number;
  direct?: boolean;
  ioengine?: string[];
}

/** fio profiles for latency, IOPS, throughput and mixed load, and a large sequential write. */
export const presets: Record<string, Preset> = {
  latency: { rw: 'randread', bs: 4096, iodepth: 1 },
  iops: { rw: 'randread', bs: 4096, iodepth: 32 },
  throughput: { rw: 'read', bs: 128 * 1024, iodepth: 32 },
  mixed: { rw: 'randrw', rwmixread: 70, bs: 4096, iodepth: 32 },
  bigwrite: { rw: 'write', bs: 1 << 20, iodepth: 16, direct: true, ioengine: ['libaio', 'psync'] },
};

const DEFAULT_SIZE = 256 * 2 ** 20;

/** fio's fadvise_hint values: 0, 1 (as rw implies), sequential, random. */
const fadviseHints: Record<string, number> = { '0': 0, '1': 1, sequential: 2, random: 3 };

export interface IopsOptions extends Record<string, unknown> {
  filename?: string;
  ioengine?: string[];
  rw?: RwMode;
  rwmixread?: number;
  bs?: number;
  iodepth?: number;
  iodepth_batch?: number;  // --iodepth_batch_submit or --iodepth_batch
  iodepth_batch_complete?: number;  // --iodepth_batch_complete_min or --iodepth_batch_complete
  iodepth_batch_complete_max?: number;
  numjobs?: number;
  size?: number;
  runtime?: number;
  time_based?: boolean;
  ramp_time?: number;
  number_ios?: number;
  direct?: boolean;
  invalidate?: boolean;
  fadvise_hint?: number;
  verify?: boolean | string;
  force?: boolean;
  outputFormat?: string;
  json?: boolean;
  output?: string;
  preset?: string;
  vsFio?: boolean;
  repeat?: number;
  sweep?: SweepAxis[];
  mode?: string;
}

function baseJob(opts: IopsOptions, filename: string, engines: string[]): BenchJob {
  const preset = opts.preset ? presets[opts.preset] : {};
  const verify = opts.verify !== undefined && opts.verify !== false && opts.verify !== '0';
  const iodepth = opts.iodepth ?? preset.iodepth ?? 1;
  checkDepth(iodepth, engines);
  for (const axis of opts.sweep ?? []) if (axis.key === 'iodepth') for (const d of axis.values) checkDepth(d as number, engines);
  return {
    filename,
    engine: '',
    rw: opts.rw ?? preset.rw ?? 'read',
    rwmixread: opts.rwmixread ?? preset.rwmixread ?? 50,
    bs: opts.bs ?? preset.bs ?? 4096,
    iodepth,
    iodepthBatch: opts.iodepth_batch ?? 1,
    iodepthBatchCompleteMin: opts.iodepth_batch_complete ?? 1,
    iodepthBatchCompleteMax: opts.iodepth_batch_complete_max ?? 0,
    numjobs: opts.numjobs ?? 1,
    size: opts.size ?? DEFAULT_SIZE,
    runtimeMs: opts.runtime,
    timeBased: opts.time_based ?? false,
    rampMs: opts.ramp_time,
    numberIos: opts.number_ios,
    direct: opts.direct ?? preset.direct ?? false,
    invalidate: opts.invalidate ?? true,
    fadviseHint: opts.fadvise_hint ?? 1,
    engineOptions: engineOptionsFrom(opts, engines),
    verify,
    force: opts.force ?? false,
  };
}

function planRun(opts: IopsOptions): IopsRun {
  const filename = opts.filename;
  if (!filename) throw new UserError('--filename is required (iolab creates and lays it out when missing)');
  const preset = opts.preset ? presets[opts.preset] : {};
  const engines = opts.ioengine ?? preset.ioengine ?? [...ENGINES];
  const json = opts.json === true || opts.outputFormat === 'json';
  return { base: baseJob(opts, filename, engines), engines, sweep: opts.sweep ?? [], json, output: opts.output,
    vsFio: opts.vsFio === true, repeat: opts.repeat ?? 3 };
}

export function iopsCommand(): Command {
  const size = numberOption({ min: 1, size: true });
  const cmd = new Command('iops')
    .description(`storage IOPS/latency benchmark with fio's job options and JSON: ${ENGINES.join(', ')}`)
    .argument('[file]', 'testIOPS mode: the file to test with -m (or the same as --filename)')
    .option('--filename <path>', 'file (or block device) to test; created and laid out when missing or short')
    .option('--ioengine <list>', `engine, comma list or 'all' (${ENGINES.join(', ')}); default all`, parseEngines)
    .option('--rw <mode>', 'read, write, randread, randwrite, randrw, readwrite (default read)', parseRw)
    .option('--rwmixread <pct>', 'percent of reads in randrw/readwrite (default 50)', numberOption({ min: 0, max: 100 }))
    .option('--bs <size>', 'block size, e.g. 4k (default 4k)', numberOption({ min: 1, max: 2 ** 30, size: true }))
    .option('--iodepth <n>', 'I/Os in flight per job (default 1)',
      numberOption({ min: 1, max: MAX_IODEPTH, maxReason: 'the most I/O slots a job keeps' }))
    .option('--iodepth_batch_submit, --iodepth_batch <n>', 'commit after this many queued I/Os (default 1, as fio)',
      numberOption({ min: 1, max: MAX_IODEPTH }))
    .option('--iodepth_batch_complete_min, --iodepth_batch_complete <n>',
      'a full queue reaps at least this many completions (default 1, as fio; 0 counts as 1)', numberOption({ min: 0, max: MAX_IODEPTH }))
    .option('--iodepth_batch_complete_max <n>', 'and at most this many per reap (default: the same as the min, as fio)',
      numberOption({ min: 0, max: MAX_IODEPTH }))
    .option('--numjobs <n>', 'threads, each running the job on the file (default 1)', numberOption({ min: 1, max: 1024 }))
    .option('--size <size>', 'bytes of the file each job addresses (default 256M)', size)
    .option('--runtime <time>', 'stop after this long (10, 500ms, 2s); without --time_based also bounded by --size', durationOption())
    .option('--time_based', 'run for --runtime even if --size is done (wraps around)')
    .option('--ramp_time <time>', 'run this long before recording', durationOption({ zero: true }))
    .option('--number_ios <n>', 'stop after this many I/Os per job', numberOption({ min: 1 }))
    .addOption(new Option('--direct [0|1]', 'O_DIRECT (bypass the page cache); default 0').argParser(boolOption()).preset('1'))
    .addOption(new Option('--invalidate [0|1]', 'drop the file\'s cached pages before the job; default 1').argParser(boolOption()).preset('1'))
    .addOption(new Option('--fadvise_hint <hint>', 'posix_fadvise the access pattern: 0, 1 (as --rw implies), sequential, random; default 1, as fio')
      .argParser((v: string) => {
        const hint = fadviseHints[v.trim()];
        if (hint === undefined) throw new UserError(`--fadvise_hint: expected 0, 1, sequential or random, got '${v}'`);
        return hint;
      }));
  for (const flag of engineOptionFlags()) cmd.addOption(flag);
  return cmd
    .option('--verify [kind]', 'writes carry a pattern derived from each offset; reads check every block (any kind: the same check)')
    .option('--force', 'allow writing into a file iolab did not create (or that changed since), and replacing a symlink')
    .option('--sweep <key=list>', 'run every point: iodepth=1,2,4,8 (also bs=, numjobs=, rw=); repeat to cross two',
      (v: string, prev?: SweepAxis[]) => parseSweep(v, prev))
    .option('--json', 'print the JSON (fio\'s keys) instead of the table')
    .option('--output <file>', 'also write the JSON to <file>')
    .addOption(new Option('--output-format <format>', 'fio\'s spelling: json is --json').choices(['normal', 'json']))
    .addOption(new Option('--preset <name>', 'fio profiles for latency, IOPS, throughput and mixed load (and bigwrite); explicit options win')
      .choices(Object.keys(presets)))
    .option('--vs-fio', 'run the same job in fio beside iolab\'s, alternating, and print the IOPS and CPU-per-I/O ratios')
    .option('--repeat <n>', 'rounds for --vs-fio (median is reported; default 3)', numberOption({ min: 1, max: 1000 }))
    .option('-m, --mode <mode>', 'testIOPS mode (the ebpf-io_uring benchmark): rRD, sRD, rWR or sWR with [file]; QD 64, 4 KiB, O_DIRECT, 10 s')
    .addHelpText('after', `
Examples:
  iolab bench iops --filename /tmp/t.dat --size 1g --rw randread --bs 4k --iodepth 32 --direct=1 \\
      --runtime 5 --time_based --ioengine io_uring,libaio
  iolab bench iops --filename /tmp/t.dat --preset iops --direct=1 --runtime 5 --vs-fio --repeat 3
  iolab bench iops --filename /tmp/t.dat --rw randread --ioengine io_uring,libaio --sweep iodepth=1,4,16,64 --runtime 2 --json
  iolab bench iops /tmp/t.dat -m=rRD --runtime 2`)
    .action(async (file: string | undefined, opts: IopsOptions) => {
      if (opts.mode !== undefined) {
        const target = file ?? opts.filename;
        if (!target) throw new UserError('testIOPS mode needs the file: iolab bench iops <file> -m=rRD');
        return runTestIops(target, opts);
      }
      if (file !== undefined) {
        if (opts.filename !== undefined && opts.filename !== file) throw new UserError('give the file once: either [file] or --filename');
        opts.filename = file;
      }
      if (opts.preset && !presets[opts.preset]) {
        throw new UserError(`unknown preset '${opts.preset}' (known: ${Object.keys(presets).join(', ')})`);
      }
      const plan = planRun(opts);
      const jobs = checkedJobs(plan);
      return plan.vsFio ? runVsFio(plan, jobs) : runIops(plan, jobs);
    });
}
