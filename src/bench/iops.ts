// `iolab bench iops`: fio's job options over the native engines (one row per engine, or per
// engine and sweep point), fio's JSON, --vs-fio side by side, and testIOPS mode (the
// ebpf-io_uring benchmark's `-m=rRD` runs). Options of the engines' own tables come from C.
import { randomInt } from 'node:crypto';
import { Command, Option } from 'commander';
import { UserError } from '../cli-util.js';
import { notPath, pathArgument, pathOption, resultsOption } from '../path-options.js';
import { boolOption, durationOption, numberOption } from '../numbers.js';
import { checkDepth, ENGINES, engineOptionFlags, engineOptionsFrom, MAX_IODEPTH, parseEngines } from './engines.js';
import { parseRw, type RwMode } from './storage-job.js';
import { parseSweep, type SweepAxis } from './sweep.js';
import { runIops } from './iops-run.js';
import { runVsFio } from './vs-fio.js';
import { checkedJobs, type IopsJob, type IopsRun } from './iops-plan.js';
import { runTestIops } from './testiops.js';
import { FioStyleCommand } from './fio-cli.js';
import { readJobFile } from './fio-jobfile.js';

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
  name?: string;
  thread?: boolean;
  group_reporting?: boolean;
  norandommap?: boolean;
  randrepeat?: boolean;
  randseed?: number;
  refill_buffers?: boolean;
}

/** fio options a job may carry that change nothing iolab measures: iolab's jobs are threads and
 * numjobs are always reported as one group. Shown in the job options as given. */
function acceptedOptions(opts: IopsOptions): Record<string, string> {
  const o: Record<string, string> = {};
  if (opts.thread !== undefined) o.thread = opts.thread ? '1' : '0';
  if (opts.group_reporting !== undefined) o.group_reporting = opts.group_reporting ? '1' : '0';
  return o;
}

function baseJob(opts: IopsOptions, filename: string, engines: string[]): IopsJob {
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
    sizeIsDefault: opts.size === undefined,
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
    norandommap: opts.norandommap ?? false,
    refillBuffers: opts.refill_buffers ?? false,
    randrepeat: opts.randrepeat ?? true,
    // --randrepeat=0: every run reads at other random offsets than the last (a new random seed
    // each run), as fio does
    randseed: opts.randrepeat === false ? randomInt(2 ** 47) : opts.randseed,
    name: opts.name,
    accepted: acceptedOptions(opts),
  };
}

function planRun(opts: IopsOptions): IopsRun {
  // fio names a job's file after the job when no filename is given (jobname.jobnum.filenum)
  const filename = opts.filename ?? (opts.name !== undefined ? `${opts.name}.0.0` : undefined);
  if (!filename) throw new UserError('--filename (or --name) is required (iolab creates and lays it out when missing)');
  const preset = opts.preset ? presets[opts.preset] : {};
  const engines = opts.ioengine ?? preset.ioengine ?? [...ENGINES];
  const json = opts.json === true || opts.outputFormat === 'json';
  return { base: baseJob(opts, filename, engines), engines, sweep: opts.sweep ?? [], json, output: opts.output,
    vsFio: opts.vsFio === true, repeat: opts.repeat ?? 3 };
}

/** fio's 0|1 option: bare means 1 (fio's spelling; fio-cli.ts makes a bare flag =1). */
function zeroOne(flags: string, help: string): Option {
  return new Option(`${flags} [0|1]`, help).argParser(boolOption());
}

export function iopsCommand(): Command {
  const size = numberOption({ min: 1, size: true });
  const cmd = new FioStyleCommand('iops')
    .description(`storage IOPS/latency benchmark with fio's job options, command line, job files and JSON: ${ENGINES.join(', ')}`)
    .addArgument(pathArgument('[jobfile]', 'a fio job file ([global] and job sections); with -m, the file testIOPS mode tests',
      { output: true }))
    .addOption(pathOption('--filename <path>', 'file (or block device, read only) to test; created and laid out when missing ' +
      '(default: <name>.0.0)', { output: true }))
    .option('--name <job>', 'the job\'s name, as fio\'s: names it in the table and the JSON')
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
    .option('--size <size>', 'bytes of the file each job addresses (default 256M; an existing file iolab did not create, or a block device: its size)', size)
    .option('--runtime <time>', 'stop after this long (10, 500ms, 2s); without --time_based also bounded by --size',
      durationOption({ wholeMs: true }))
    .option('--time_based', 'run for --runtime even if --size is done (wraps around)')
    .option('--ramp_time <time>', 'run this long before recording', durationOption({ zero: true, wholeMs: true }))
    .option('--number_ios <n>', 'stop after this many I/Os per job', numberOption({ min: 1 }))
    .addOption(zeroOne('--direct', 'O_DIRECT (bypass the page cache); default 0, bare --direct is 1'))
    .addOption(zeroOne('--invalidate', 'drop the file\'s cached pages before the job and on every pass of a time_based job; default 1'))
    .addOption(new Option('--fadvise_hint <hint>', 'posix_fadvise the access pattern: 0, 1 (as --rw implies), sequential, random; default 1, as fio')
      .argParser((v: string) => {
        const hint = fadviseHints[v.trim()];
        if (hint === undefined) throw new UserError(`--fadvise_hint: expected 0, 1, sequential or random, got '${v}'`);
        return hint;
      }))
    .addOption(zeroOne('--norandommap', 'random offsets drawn with replacement; default 0: every block once per pass, as fio'))
    .addOption(zeroOne('--randrepeat', 'the same random offsets every run; default 1, as fio (0: another sequence each run)'))
    .option('--randseed <n>', 'picks the sequence of random offsets and rw mix (with randrepeat=1), as fio\'s randseed', numberOption({ min: 0 }))
    .addOption(zeroOne('--refill_buffers', 'fresh random data in the buffer before every write; default 0, as fio'))
    .addOption(zeroOne('--thread', 'accepted as fio takes it: iolab\'s jobs are always threads'))
    .addOption(zeroOne('--group_reporting', 'accepted as fio takes it: iolab always sums numjobs into one result'));
  for (const flag of engineOptionFlags()) cmd.addOption(flag);
  return cmd
    .option('--verify [kind]', 'writes carry a pattern derived from each offset; reads check every block (any kind: the same check)')
    .option('--force', 'allow writing into a file iolab did not create (or that changed since), replacing a symlink, ' +
      'and replacing an existing --output file')
    .option('--sweep <key=list>', 'run every point: iodepth=1,2,4,8 (also bs=, numjobs=, rw=); repeat to cross two',
      (v: string, prev?: SweepAxis[]) => parseSweep(v, prev))
    .option('--json', 'print the JSON (fio\'s keys) instead of the table')
    .addOption(resultsOption('also write the JSON to <file>'))
    .addOption(notPath(new Option('--output-format <format>', 'fio\'s spelling: json is --json').choices(['normal', 'json'])))
    .addOption(new Option('--preset <name>', 'fio profiles for latency, IOPS, throughput and mixed load (and bigwrite); explicit options win')
      .choices(Object.keys(presets)))
    .option('--vs-fio', 'run the same job in fio beside iolab\'s, alternating, and print the IOPS and CPU-per-I/O ratios')
    .option('--repeat <n>', 'rounds for --vs-fio (median is reported; default 3)', numberOption({ min: 1, max: 1000 }))
    .addOption(notPath(new Option('-m, --mode <mode>', 'testIOPS mode (the ebpf-io_uring benchmark): rRD, sRD, rWR or sWR with [file]; ' +
      'QD 64, 4 KiB, O_DIRECT, 10 s')))
    .addHelpText('after', `
Options may be spelled as fio spells them: -rw=randread, --bs=4k, bare booleans (-thread, -time_based).
Examples:
  iolab bench iops --filename /tmp/t.dat --size 1g --rw randread --bs 4k --iodepth 32 --direct=1 \\
      --runtime 5 --time_based --ioengine io_uring,libaio
  iolab bench iops -name=test -filename=/tmp/t.dat -rw=randread -bs=4k -ioengine=libaio -iodepth=32 -direct=1 -runtime=5 -time_based
  iolab bench iops jobs.fio
  iolab bench iops --filename /tmp/t.dat --preset iops --direct=1 --runtime 5 --vs-fio --repeat 3
  iolab bench iops --filename /tmp/t.dat --rw randread --ioengine io_uring,libaio --sweep iodepth=1,4,16,64 --runtime 2 --json
  iolab bench iops /tmp/t.dat -m=rRD --runtime 2`)
    .action(async (file: string | undefined, opts: IopsOptions) => {
      if (opts.mode !== undefined) {
        const target = file ?? opts.filename;
        if (!target) throw new UserError('testIOPS mode needs the file: iolab bench iops <file> -m=rRD');
        return runTestIops(target, opts);
      }
      // a job file's jobs run one after another; options on the command line apply to each
      const sections = file !== undefined ? readJobFile(file, cmd) : [{ name: opts.name, options: {} }];
      const plans = sections.map((s) => planRun({ ...s.options, ...opts } as IopsOptions));
      const runs = plans.map((plan) => ({ plan, jobs: checkedJobs(plan) }));
      if (!plans[0].vsFio) return runIops(runs);
      if (runs.length > 1 && plans[0].json) throw new UserError('--vs-fio --json takes a job file of one job');
      for (const run of runs) await runVsFio(run.plan, run.jobs);
    });
}
