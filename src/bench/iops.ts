// `iolab bench iops`: fio's job options over the native engines (one row per engine, or per
// engine and sweep point), fio's JSON, --vs-fio side by side, and testIOPS mode (the
// ebpf-io_uring benchmark's `-m=rRD` runs). Options of the engines' own tables come from C.
import { Command, Option } from 'commander';
import { UserError, withStdoutCopy } from '../cli-util.js';
import { prepareOutputs, writeOutputFile } from '../write-target.js';
import { notPath, pathArgument, pathOption, resultsOption } from '../path-options.js';
import { boolOption, durationOption, numberOption } from '../numbers.js';
import { ENGINE_NAMES, ENGINES, engineOptionFlags, MAX_IODEPTH, parseEngines } from './engines.js';
import { parseRw } from './storage-job.js';
import { parseSweep, type SweepAxis } from './sweep.js';
import { blockSizesOption, cmdprioSplitOption, offsetOption, flowOption, jobBlockSize, overwriteOption, splitOption, rangeOption, rateIopsOption, rateOption, submitModeOption, syncModeOption, exitWhatOption, percentOption, verifyPatternOption } from './block-sizes.js';
import { distributionOption, fileServiceOption, generatorOption } from './distribution.js';
import { steadyStateOption } from './steadystate.js';
import { runIops } from './iops-run.js';
import { runVsFio } from './vs-fio.js';
import { planRun, type RunOptions } from './iops-plan.js';
import { presets, type IopsOptions } from './iops-job.js';
import { runTestIops } from './testiops.js';
import { FioStyleCommand, showCommand } from './fio-cli.js';
import { readJobFiles } from './fio-jobfile.js';
import { fioJobList } from './fio-jobs.js';

/** fio's fadvise_hint values: 0, 1 (as rw implies), sequential, random. */
const fadviseHints: Record<string, number> = { '0': 0, '1': 1, sequential: 2, random: 3 };

/** bench iops: its job options' values are checked as the line is parsed, as commander checks an
 * option's value, so a bad one is refused before anything starts (`iolab trace` parses the traced
 * line and stops before the action). */
class IopsCommand extends FioStyleCommand {
  override parseOptions(argv: string[]) {
    const parsed = super.parseOptions(argv);
    fioJobList(this, this.fioCommandLine, undefined);
    return parsed;
  }
}

/** fio's 0|1 option: bare means 1 (fio's spelling; fio-cli.ts makes a bare flag =1). */
function zeroOne(flags: string, help: string): Option {
  return new Option(`${flags} [0|1]`, help).argParser(boolOption());
}

export function iopsCommand(): Command {
  const size = numberOption({ min: 1, size: true });
  const cmd = new IopsCommand('iops')
    .description(`storage IOPS/latency benchmark with fio's job options, command line, job files and JSON: ${ENGINES.join(', ')}`)
    .addArgument(pathArgument('[jobfile...]', 'fio job files ([global] and job sections; each after the first from fio\'s ' +
      'defaults, behind a stonewall, as fio runs several); with -m, the file testIOPS mode tests', { output: true, called: 'job file' }))
    .addOption(pathOption('--filename <path>', 'file (or block device, read only) to test; created and laid out when missing ' +
      '(default: <name>.0.0); a:b is one job over both files, as fio\'s (\\: a colon in a name)', { output: true }))
    .option('--name <job>', 'starts a job, as fio\'s: the options after it are that job\'s (those before the first --name every job\'s); names it in the table and the JSON')
    .option('--ioengine <list>', `engine, comma list or 'all' (${ENGINES.join(', ')}; also ${ENGINE_NAMES.filter((e) => !ENGINES.includes(e)).join(', ')} ` +
      'when named); default all; psync, fio\'s default, for the sections of a .fio and for --name jobs', parseEngines)
    .option('--rw <mode>', 'read, write, randread, randwrite, randrw, readwrite (default read)', parseRw)
    .option('--rwmixread <pct>', 'percent of reads in randrw/readwrite (default 50)', numberOption({ min: 0, max: 100 }))
    .option('--bs <size>', 'block size, e.g. 4k (default 4k); fio\'s 4k,8k: reads 4k, writes 8k; 1k-4k is 1k, as fio 3.33 reads it (--bsrange is a range)', blockSizesOption)
    .option('--blocksize_range, --bsrange <range>', 'fio\'s block size range, 1k-4k: each I/O\'s length a multiple of the smallest', rangeOption)
    .addOption(notPath(new Option('--blockalign, --ba <size>', 'random offsets a multiple of this, as fio\'s blockalign (default: the block size)')
      .argParser(numberOption({ min: 1, max: 2 ** 30, size: true }))))
    .option('--bssplit <split>', 'fio\'s block size split, 4k/70:64k/30: each I/O\'s length one of the sizes, by its share of the I/Os', splitOption)
    .addOption(notPath(new Option('--filesize <size>', 'lay the file out at this size, the I/O over --size of it, as fio\'s filesize (default --size)')
      .argParser(size)))
    .addOption(zeroOne('--gtod_reduce', 'record no latencies and no bw/IOPS samples (fio\'s: fewer clock reads per I/O); default 0'))
    .addOption(notPath(new Option('--write_lat_log [prefix]', 'write fio\'s latency logs, PREFIX_lat.N.log, _clat, _slat (N: the job\'s number; ' +
      'bare: the job\'s name), as fio writes them')))
    .addOption(notPath(new Option('--write_bw_log [prefix]', 'write fio\'s bandwidth log, PREFIX_bw.N.log')))
    .addOption(notPath(new Option('--write_iops_log [prefix]', 'write fio\'s IOPS log, PREFIX_iops.N.log')))
    .option('--log_avg_msec <ms>', 'average the logs over windows of this many ms, as fio (default 0: a line per I/O)', numberOption({ min: 0 }))
    .addOption(notPath(new Option('--offset <size>', 'start the job\'s I/O this far into the file, as fio\'s offset (the file is laid out to offset + size); ' +
      'N% is that share of an existing file (0 for a new one), as fio\'s').argParser(offsetOption)))
    .addOption(new Option('--zonemode <mode>', 'none, or strided: zonesize bytes of I/O in each zone of zonerange, then zoneskip ' +
      'on, as fio\'s (zbd, a zoned block device, is refused)').argParser((v: string) => {
      if (v.trim() === 'none' || v.trim() === 'strided') return v.trim();
      throw new UserError(`--zonemode: ${v.trim() === 'zbd' ? 'zbd drives a zoned block device\'s zones, which iolab does not; ' : ''}` +
        `expected none or strided, got '${v}'`);
    }))
    .addOption(notPath(new Option('--zonesize <size>', 'bytes of I/O in each zone (zonemode=strided)').argParser(numberOption({ min: 0, size: true }))))
    .addOption(notPath(new Option('--zonerange <size>', 'the size of each zone (default zonesize)').argParser(numberOption({ min: 0, size: true }))))
    .addOption(notPath(new Option('--zoneskip <size>', 'bytes skipped after each zone').argParser(numberOption({ min: 0, size: true }))))
    .addOption(notPath(new Option('--offset_increment <size>', 'each copy of a job (numjobs) starts this much further into the file ' +
      'than the one before, as fio\'s offset_increment').argParser(numberOption({ min: 0, size: true }))))
    .addOption(notPath(new Option('--io_limit, --io_size <size>', 'bytes of I/O per loop, wrapping around --size, as fio\'s io_size (default --size)')
      .argParser(size)))
    .option('--loops <n>', 'run the job\'s I/O this many times, as fio\'s loops (default 1)', numberOption({ min: 1, max: 2 ** 30 }))
    .option('--random_distribution <dist>', 'random offsets drawn from zipf:THETA, pareto:H or normal:DEV (each [:CENTER]), as fio\'s; ' +
      'random (default) is uniform; a distribution draws blocks with replacement (no random map, as fio)', distributionOption)
    .option('--steadystate <criterion>', 'end the job once it is steady, as fio\'s steadystate (ss): iops, bw or lat (fio 3.42), ' +
      'each _slope or not, with a limit, a percent of the mean or absolute (iops:10%, bw_slope:0.1%); with --steadystate_duration',
      steadyStateOption)
    .option('--steadystate_duration <time>', 'the window steadiness is judged over (ss_dur, seconds unless a unit is given); 0: off',
      durationOption({ zero: true, wholeMs: true }))
    .option('--steadystate_ramp_time <time>', 'judge from this long after the start on (ss_ramp)', durationOption({ zero: true, wholeMs: true }))
    .option('--steadystate_check_interval <time>', 'one value of the window every this long (ss_interval, fio 3.42; default 1s)',
      durationOption({ wholeMs: true }))
    .addOption(notPath(new Option('--file_service_type <type>', 'how a job over several files picks the next one, as fio\'s: ' +
      'roundrobin (default), sequential or random (each :N, the I/Os before the next), zipf, pareto or normal (:VALUE[:CENTER])')
      .argParser(fileServiceOption)))
    .option('--random_generator <gen>', 'fio\'s tausworthe (default), tausworthe64 or lfsr (every block once per pass without a map: the random map on)',
      generatorOption)
    .addOption(notPath(new Option('--rate <bytes>', 'cap the job\'s bandwidth (bytes/s; read,write: 1m,500k; ,500k caps writes only), as fio\'s rate')
      .argParser(rateOption)))
    .addOption(new Option('--rate_process <process>', 'how --rate and --rate_iops space the I/Os: linear (the same gap, fio\'s default) ' +
      'or poisson (gaps drawn from an exponential of that mean), as fio\'s').choices(['linear', 'poisson']))
    .option('--rate_iops <n>', 'cap the job\'s I/Os per second (read,write as --rate), as fio\'s rate_iops', rateIopsOption)
    .addOption(new Option('--io_submit_mode <mode>', 'inline (the job thread submits, fio\'s default) or offload (iodepth submit ' +
      'threads, each with the job\'s engine, run the I/Os the job thread paces), as fio\'s').argParser(submitModeOption))
    .option('--fsync <n>', 'fsync the file after every n writes (waiting for those in flight), as fio\'s fsync; timed as fio\'s sync figures',
      numberOption({ min: 0 }))
    .option('--fdatasync <n>', 'the same with fdatasync, as fio\'s fdatasync', numberOption({ min: 0 }))
    .option('--flow <weight>', 'share the I/Os of the jobs of one --flow_id by weight (1 and 8: about 1:8), as fio\'s flow', flowOption)
    .option('--flow_id <n>', 'the flow a job\'s --flow weight counts in (default 0)', numberOption({ min: 0 }))
    .option('--flow_sleep <us>', 'a job ahead of its share waits this long, as fio\'s flow_sleep (default 0: it yields)', numberOption({ min: 0 }))
    .option('--wait_for <job>', 'start once the named job (all its copies) ended, as fio\'s wait_for (when every job since the last wait is that job\'s)')
    .addOption(zeroOne('--unlink', 'delete the job\'s file when the job is done, as fio\'s unlink (a file that existed before the run only with --force); default 0'))
    .addOption(notPath(new Option('--sync <mode>', 'open the file O_SYNC (1, sync) or O_DSYNC (dsync), as fio\'s sync; default 0 (none)')
      .argParser(syncModeOption)))
    .option('--thinktime <us>', 'stall this many microseconds before issuing each next I/O, as fio\'s thinktime (default 0)', numberOption({ min: 0 }))
    .addOption(notPath(new Option('--overwrite <0|1>', 'fio\'s overwrite: 1 is how iolab lays out every new file (written whole before the job); ' +
      '0 (fio\'s default) is refused, as iolab always lays out').argParser(overwriteOption)))
    .option('--cmdprio_bssplit <split>', 'libaio and io_uring: a share of the I/Os of each block size at a priority, ' +
      'BS/PERCENT[/CLASS/LEVEL[/HINT]]:... (reads,writes), as fio\'s cmdprio_bssplit', cmdprioSplitOption)
    .option('--prioclass <class>', 'the job thread\'s I/O priority class, as fio\'s prioclass: 1 realtime, 2 best effort, 3 idle ' +
      '(0: best effort)', numberOption({ min: 0, max: 3 }))
    .option('--prio <level>', 'the job thread\'s I/O priority level in its class, 0 (highest) to 7, as fio\'s prio', numberOption({ min: 0, max: 7 }))
    .addOption(zeroOne('--log_offset', 'each log line has the I/O\'s offset after its block size, as fio\'s; default 0'))
    .addOption(zeroOne('--log_prio', 'the logs\' last column is each I/O\'s priority value (0x6000), not 1 for a realtime one, as fio\'s; default 0'))
    .option('--latency_target <time>', 'search for the deepest queue (up to --iodepth) whose I/Os finish within this time ' +
      '(microseconds unless a unit is given), as fio\'s latency_target', durationOption({ unit: 'us' }))
    .option('--latency_window <time>', 'the window each depth of that search is tried for (microseconds unless a unit is given)',
      durationOption({ unit: 'us' }))
    .option('--latency_percentile <pct>', 'the percent of a window\'s I/Os that must finish within the target (default 100)', percentOption)
    .addOption(zeroOne('--latency_run', 'keep searching instead of a last window at the depth found, as fio\'s; default 0'))
    .addOption(zeroOne('--exitall', 'when a job ends, end the jobs exit_what names (default: those of its group), as fio\'s exitall; default 0'))
    .addOption(notPath(new Option('--exit_what <jobs>', 'the jobs an exitall job ends: group (its group\'s, the default), stonewall ' +
      '(every job running) or all (every job running, the jobs of later steps never start), as fio\'s').argParser(exitWhatOption)))
    .addOption(zeroOne('--atomic', 'every write with RWF_ATOMIC (all of it or none reaches the disk; libaio, io_uring, pvsync2), ' +
      'as fio 3.42\'s atomic; default 0'))
    .addOption(zeroOne('--end_syncfs', 'syncfs the file system when a job that wrote is done, as fio 3.42\'s; default 0'))
    .addOption(zeroOne('--end_fsync', 'fsync the file when a job that wrote is done, as fio\'s; default 0'))
    .option('--iodepth <n>', 'I/Os in flight per job (default 1)',
      numberOption({ min: 1, max: MAX_IODEPTH, maxReason: 'the most I/O slots a job keeps' }))
    .option('--iodepth_batch_submit, --iodepth_batch <n>', 'commit after this many queued I/Os (default 1, as fio)',
      numberOption({ min: 1, max: MAX_IODEPTH }))
    .option('--iodepth_batch_complete_min, --iodepth_batch_complete <n>',
      'a full queue reaps at least this many completions (default 1, as fio; 0 counts as 1)', numberOption({ min: 0, max: MAX_IODEPTH }))
    .option('--iodepth_batch_complete_max <n>', 'and at most this many per reap (default: the same as the min, as fio)',
      numberOption({ min: 0, max: MAX_IODEPTH }))
    .option('--numjobs <n>', 'copies of the job at the same time, as fio\'s (each with a file of its own, <name>.<n>.0, when --filename is not given; default 1)',
      numberOption({ min: 1, max: 1024 }))
    .option('--size <size>', 'bytes of the file each job addresses (default 256M; an existing file iolab did not create, or a block device: its size)', size)
    .option('--runtime <time>', 'stop after this long (10, 500ms, 2s); without --time_based also bounded by --size',
      durationOption({ wholeMs: true }))
    .option('--time_based', 'run for --runtime even if --size is done (wraps around)')
    .option('--ramp_time <time>', 'run this long before recording', durationOption({ zero: true, wholeMs: true }))
    .addOption(notPath(new Option('--ramp_size <size>', 'move this many bytes before recording (the job\'s, or its group\'s with ' +
      'group_reporting; they count in its size), as fio 3.42\'s ramp_size').argParser(size)))
    .option('--number_ios <n>', 'stop after this many I/Os per job, counted after --ramp_time, if --size does not end it first (a time_based job runs its --runtime, as fio)', numberOption({ min: 1 }))
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
    .option('--dedupe_percentage <pct>', 'this share of the writes repeat an earlier buffer, so the data dedupes so far, as fio\'s; ' +
      'default 0', numberOption({ min: 0, max: 100 }))
    .addOption(new Option('--dedupe_mode <mode>', 'which buffer a repeat is: repeat (the last new one, fio\'s default) or ' +
      'working_set (one of the first new ones, dedupe_working_set_percentage of the blocks\' worth)').choices(['repeat', 'working_set']))
    .option('--dedupe_working_set_percentage <pct>', 'the working set of dedupe_mode=working_set, a percent of the blocks (default 5)',
      numberOption({ min: 0, max: 100 }))
    .addOption(zeroOne('--dedupe_global', 'the working set is shared by every job with this option, as fio\'s; default 0'))
    .option('--buffer_compress_percentage <pct>', 'this share of each chunk of a write is zeros, so it compresses so far, as fio\'s',
      numberOption({ min: 0, max: 100 }))
    .addOption(notPath(new Option('--buffer_compress_chunk <size>', 'the chunk buffer_compress_percentage is applied to (default 512)')
      .argParser(numberOption({ min: 1, size: true }))))
    .addOption(zeroOne('--refill_buffers', 'fresh random data in the buffer before every write; default 0, as fio'))
    .addOption(zeroOne('--thread', 'accepted as fio takes it: iolab\'s jobs are always threads'))
    .addOption(notPath(new Option('--directory <dir>', 'the folder a job\'s files are in, as fio\'s: its filename, or <name>.<n>.0, ' +
      'under it (each file checked as --filename is)')))
    .option('--description <text>', 'a text describing the job, as fio\'s (shown in the JSON as its desc; changes nothing)')
    .addOption(notPath(zeroOne('--allow_file_create', 'create a job\'s file when missing; default 1, as fio (0: a missing file is refused)')))
    .addOption(zeroOne('--group_reporting', 'one result for the jobs of a group, as fio\'s (default 0: a result per job, each of numjobs\' copies too)'))
    .addOption(zeroOne('--stonewall', 'wait for the jobs before this one to end, and start a new group, as fio\'s (jobs run at the same time without it)'))
    .addOption(zeroOne('--new_group', 'start a new group (fio\'s groupid) without waiting'));
  for (const flag of engineOptionFlags()) cmd.addOption(flag);
  return cmd
    .option('--verify [kind]', 'writes carry a pattern derived from each offset; reads check every block (any kind: the same check)')
    .option('--verify_backlog <n>', 'after every n blocks written, read them back and check them while the job runs, as fio\'s ' +
      'verify_backlog (the pass after the job still checks every block)', numberOption({ min: 0 }))
    .option('--verify_backlog_batch <n>', 'how many of those blocks are read back each time (default: all), as fio\'s',
      numberOption({ min: 0 }))
    .addOption(zeroOne('--verify_dump', 'a block that fails its verify is written to NAME.OFFSET.received, what was expected to ' +
      '.expected, in the current folder (never over a file there), as fio\'s verify_dump; default 0'))
    .addOption(notPath(new Option('--verify_pattern <bytes>', 'writes carry these bytes repeated (0xaa555aa5, or "text"), and the ' +
      'verify checks them, as fio\'s verify_pattern (it turns --verify on); its length divides --bs').argParser(verifyPatternOption)))
    .option('--force', 'allow writing into a file iolab did not create (or that changed since), replacing a symlink, ' +
      'and replacing an existing --output file')
    .option('--sweep <key=list>', 'run every point: iodepth=1,2,4,8 (also bs=, numjobs=, rw=); repeat to cross two',
      (v: string, prev?: SweepAxis[]) => parseSweep(v, prev))
    .option('--json', 'print the JSON (fio\'s keys) instead of the table')
    .option('--parse-only', 'read the job file and options and stop, as fio\'s: nothing runs (an option iolab refuses is refused)')
    .option('--showcmd', 'print the job file as one command line (fio\'s --showcmd, with iolab bench iops first) and stop')
    .option('--section <name>', 'run only the job sections of this name (repeat for more), as fio\'s --section',
      (v: string, prev: string[] = []) => [...prev, v])
    .option('--readonly', 'refuse a job that writes, or whose file would be laid out, as fio\'s --readonly')
    .option('--eta-newline <time>', 'the progress line starts a new line every this long (2s, 500ms), as fio\'s --eta-newline',
      durationOption({ wholeMs: true }))
    .addOption(resultsOption('also write the JSON to <file> (with --output-format=normal the text report, as fio)'))
    .addOption(notPath(new Option('--output-format <format>', 'fio\'s spelling: json is --json (json+ adds each completion ' +
      'latency bucket, clat_ns\'s bins, as fio\'s); normal with --output writes the text report there; fio\'s terse is not written')
      .choices(['normal', 'json', 'json+', 'terse'])))
    .addOption(new Option('--minimal', 'fio\'s terse output: not written by iolab (refused with the reason)').hideHelp())
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
    .action(async (files: string[], given: RunOptions & { mode?: string; minimal?: boolean }) => {
      const file = files[0];
      if (given.minimal || given.outputFormat === 'terse') {
        throw new UserError(`${given.minimal ? '--minimal' : '--output-format=terse'}: fio's terse lines (semicolon-separated, ` +
          'versioned) are not written by iolab; --output-format=json (or json+) gives the same figures as fio\'s JSON');
      }
      if (given.mode !== undefined && files.length > 1) {
        throw new UserError(`testIOPS mode tests one file, got ${files.length}: ${files.join(', ')}`);
      }
      // --output takes the format asked for, as fio's does: with --output-format=normal the
      // text report (printed as well), else the JSON
      const textTo = given.outputFormat === 'normal' && given.json !== true ? given.output : undefined;
      const run = textTo === undefined ? given : { ...given, output: undefined };
      const sections = files.length > 0 && run.mode === undefined ? readJobFiles(files, run.section) : undefined;
      if (run.section !== undefined && sections === undefined) throw new UserError('--section picks sections of a job file; give one');
      if (run.showcmd) {
        process.stdout.write(`${showCommand(cmd.fioCommandLine, sections)}\n`);
        return;
      }
      const list = fioJobList(cmd, cmd.fioCommandLine, sections);
      if (run.parseOnly) return;
      const go = async () => {
        if (run.mode !== undefined) {
          const opts = { ...list.jobs[0].options, ...run } as IopsOptions;
          const target = file ?? opts.filename;
          if (!target) throw new UserError('testIOPS mode needs the file: iolab bench iops <file> -m=rRD');
          return runTestIops(target, { ...opts, bs: jobBlockSize(opts.bs, opts.bsrange, 'read') });
        }
        const plan = planRun(list, run);
        await prepareOutputs(); // fio's log files, checked by planRun
        if (plan.vsFio) return runVsFio(plan, { jobFiles: files, commandLine: cmd.fioCommandLine });
        return runIops(plan);
      };
      if (textTo === undefined) return go();
      const { text } = await withStdoutCopy(go);
      writeOutputFile(textTo, text, '--output');
    });
}
