// `iolab bench latency`: testIOLatency of the ebpf-io_uring benchmark. Per engine, 64 reads of --infile and 64 writes
// to --outfile, one at a time (QD 1, 4 KiB, O_DIRECT unless --no-direct), and the mean latency with percentiles.
import { Command } from 'commander';
import { statSync } from 'node:fs';
import type { BenchJob, BenchResult } from '../native.js';
import { commandLine, emitResults, UserError } from '../cli-util.js';
import { interruptedBy, interruption, markInterrupted } from '../interrupt.js';
import { machineInfo } from './machine.js';
import { checkJob, checkLayoutSpace, logicalBlockSize, runJob } from './storage-job.js';
import { ENGINES, parseEngines } from './engines.js';
import { percentile } from './storage-table.js';
import { formatNs, table } from '../format.js';
import { numberOption } from '../numbers.js';
import { pathOption, resultsOption } from '../path-options.js';
import { notRegularFile } from '../write-target.js';
import { showText } from '../show-bytes.js';

interface LatencyOptions {
  engine: string[];
  infile?: string;
  outfile?: string;
  count: number;
  bs: number;
  direct: boolean;
  force?: boolean;
  json?: boolean;
  output?: string;
}


function summary(r: BenchResult, dir: 'read' | 'write') {
  const lat = r[dir].lat;
  return {
    ios: r[dir].ios, mean_ns: lat.mean, min_ns: lat.min, max_ns: lat.max,
    p50_ns: percentile(lat, 50), p99_ns: percentile(lat, 99), p99_9_ns: percentile(lat, 99.9),
  };
}

/** 'all' stays 'all' until --no-direct is known: under O_DIRECT it is every engine but mmap. */
function engineList(value: string): string[] {
  return value.trim() === 'all' ? ['all'] : parseEngines(value);
}

/** The engines to run, or one line on why not. mmap copies to and from the page cache whatever
 * the open flags say, so under O_DIRECT its figures would not be what the header claims. */
function enginesToRun(opts: LatencyOptions): string[] {
  const engines = opts.engine[0] === 'all' ? ENGINES.filter((e) => !opts.direct || e !== 'mmap') : opts.engine;
  if (opts.direct && engines.includes('mmap')) {
    throw new UserError("--engine mmap copies through the page cache, so it cannot do bench latency's O_DIRECT reads and " +
      'writes; add --no-direct to time every engine on the page cache');
  }
  return engines;
}

/** O_DIRECT's alignment, in bench latency's terms (checkJob words it for bench iops's --direct). */
function checkDirectAlignment(opts: LatencyOptions, files: string[]): void {
  if (!opts.direct) return;
  for (const file of files) {
    const lbs = logicalBlockSize(file);
    if (lbs && opts.bs % lbs.size !== 0) {
      throw new UserError('bench latency reads and writes with O_DIRECT (--no-direct turns it off), which needs --bs to be a ' +
        `multiple of the logical block size of ${lbs.device} (${lbs.size} bytes); got ${opts.bs}`);
    }
  }
}

/** The bytes of --infile the reads address: a regular file's whole blocks; a block device's
 * size comes from the device when the job opens it (BLKGETSIZE64; its stat says 0). */
function inputSize(infile: string, bs: number): Pick<BenchJob, 'size' | 'sizeIsDefault'> {
  const st = statSync(infile);  // ENOENT etc. propagate as one line
  if (st.isBlockDevice()) return { size: bs, sizeIsDefault: true };
  const refusal = notRegularFile(infile, st, 'bench latency reads a regular file or a block device');
  if (refusal) throw refusal;
  if (st.size < bs) throw new UserError(`'${showText(infile)}' is smaller than one block (${st.size} bytes < ${bs})`);
  return { size: st.size - (st.size % bs) };
}

export function latencyCommand(): Command {
  return new Command('latency')
    .description('testIOLatency: N reads of --infile and N writes to --outfile per engine (QD 1); mean latency and percentiles')
    .option('--engine <list>', `${ENGINES.join(', ')} (comma list, or 'all'); mmap only with --no-direct: it always goes ` +
      'through the page cache', engineList, ['sync', 'io_uring', 'posixaio', 'libaio'])
    .addOption(pathOption('--infile <path>', 'file (or block device) to read, e.g. made by `iolab gen`; must exist and hold ' +
      'at least one block', { output: false }))
    .addOption(pathOption('--outfile <path>', 'file to write; created by iolab, or --force to write into another file', { output: true }))
    .option('--count <n>', 'reads and writes per engine', numberOption({ min: 1 }), 64)
    .option('--bs <size>', 'bytes per I/O', numberOption({ min: 512, size: true }), 4096)
    .option('--no-direct', 'use the page cache (default: O_DIRECT, as testIOLatency does)')
    .option('--force', 'allow writing into an --outfile iolab did not create, and replacing an existing --output file')
    .option('--json', 'print the JSON instead of the table')
    .addOption(resultsOption('also write the JSON to <file>'))
    .addHelpText('after', `
Example:
  iolab gen /tmp/dict.txt --size 16M
  iolab bench latency --engine sync,io_uring --infile /tmp/dict.txt --outfile /tmp/out.dat`)
    .action(async (opts: LatencyOptions) => {
      if (!opts.infile) throw new UserError('--infile is required (the file to read)');
      if (!opts.outfile) throw new UserError('--outfile is required (the file to write)');
      const engines = enginesToRun(opts);
      // --count I/Os, however small the file: counted on past its end, pass after pass
      const common = { bs: opts.bs, iodepth: 1, numjobs: 1, numberIos: opts.count, numberIosWraps: true, direct: opts.direct, invalidate: true };
      const readJob: BenchJob = { ...common, filename: opts.infile, engine: '', rw: 'read', ...inputSize(opts.infile, opts.bs) };
      const writeJob: BenchJob = { ...common, filename: opts.outfile, engine: '', rw: 'write', size: opts.count * opts.bs, force: opts.force };
      checkDirectAlignment(opts, [opts.infile, opts.outfile]);
      checkJob(readJob, { option: '--infile', output: false });
      checkJob(writeJob, { option: '--outfile', output: true });
      // laid out once the first engine's reads are done: a file system without room is refused
      // before the first read, not after them
      checkLayoutSpace([writeJob], true);
      const signal = interruption();
      const rows: string[][] = [];
      const out: Record<string, unknown>[] = [];
      for (const engine of engines) {
        if (signal.aborted) break;
        const label = engine;
        const show = { show: !opts.json, label };
        const reads = await runJob({ ...readJob, engine }, show);
        const writes = reads.unavailable || reads.interrupted ? reads : await runJob({ ...writeJob, engine }, show);
        if (reads.unavailable || writes.unavailable) {
          const why = reads.unavailable ?? writes.unavailable;
          rows.push([label, `unavailable: ${why}`]);
          out.push({ engine: label, unavailable: why });
          continue;
        }
        const r = summary(reads, 'read');
        // the writes of an engine whose reads were cut short never ran: no figures, not 0ns
        const w = writes === reads ? undefined : summary(writes, 'write');
        const partial = reads.interrupted || writes.interrupted || w === undefined;
        out.push({ engine: label, read: r, ...(w ? { write: w } : {}), ...(partial ? { partial: true } : {}) });
        rows.push([partial ? `${label} (partial)` : label, formatNs(r.mean_ns), formatNs(r.p50_ns), formatNs(r.p99_ns),
          ...(w ? [formatNs(w.mean_ns), formatNs(w.p50_ns), formatNs(w.p99_ns)] : ['-', '-', '-'])]);
      }
      if (signal.aborted) markInterrupted();
      const doc = {
        count: opts.count, bs: opts.bs, direct: opts.direct, engines: out, machine: machineInfo(opts.outfile),
        command: commandLine(), ...(signal.aborted ? { interrupted: true } : {}),
      };
      const title = `iolab bench latency: ${opts.count} reads of ${showText(opts.infile)}, ${opts.count} writes to ${showText(opts.outfile)}, ` +
        `bs ${opts.bs}, QD 1, ${opts.direct ? 'O_DIRECT' : 'page cache'} (lat = submit to completion)\n`;
      // a run cut short says so after the table, as bench iops does
      const notRun = engines.length - out.length;
      const trailer = signal.aborted
        ? `interrupted (${interruptedBy() ?? 'a signal'}): ${out.some((e) => e.partial) ? 'the row marked (partial) stopped early' : 'stopped between engines'}` +
          `${notRun > 0 ? `; ${notRun === 1 ? 'one engine' : `${notRun} engines`} after it did not run` : ''}\n`
        : '';
      emitResults(opts, doc, title + table(['engine', 'read mean', 'read p50', 'read p99', 'write mean', 'write p50', 'write p99'], rows) + trailer);
    });
}
