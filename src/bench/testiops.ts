// testIOPS mode (the ebpf-io_uring benchmark): `iolab bench iops <file> -m=rRD|sRD|rWR|sWR` runs
// sync, io_uring, posixaio and libaio at QD 64, 4 KiB, O_DIRECT for 10 s each and prints that
// benchmark's line per engine. --json gives the figures with the machine and the command line.
import { existsSync, statSync } from 'node:fs';
import type { BenchJob } from '../native.js';
import { commandLine, UserError } from '../cli-util.js';
import { interruption, markInterrupted } from '../interrupt.js';
import { machineInfo } from './machine.js';
import { checkJob, runJob, type RwMode } from './storage-job.js';
import { outputJson } from './iops-plan.js';
import { resultIops } from './storage-table.js';

/** The mode names -> rw and the words the benchmark printed. */
const modes: Record<string, { rw: RwMode; words: string }> = {
  rRD: { rw: 'randread', words: 'random read' },
  sRD: { rw: 'read', words: 'sequential read' },
  rWR: { rw: 'randwrite', words: 'random write' },
  sWR: { rw: 'write', words: 'sequential write' },
};
/** Its four engines, in its order. */
const modeEngines = ['sync', 'io_uring', 'posixaio', 'libaio'];

export interface TestIopsOptions {
  mode?: string;
  size?: number;
  bs?: number;
  iodepth?: number;
  runtime?: number;
  direct?: boolean;
  force?: boolean;
  filename?: string;
  json?: boolean;
  outputFormat?: string;
  output?: string;
}

export async function runTestIops(file: string, opts: TestIopsOptions): Promise<void> {
  const json = opts.json === true || opts.outputFormat === 'json';
  const key = (opts.mode ?? '').replace(/^=/, '');
  const mode = modes[key];
  if (!mode) throw new UserError(`unknown mode '${key}' (known: ${Object.keys(modes).join(', ')})`);
  const size = opts.size ?? (existsSync(file) && statSync(file).isFile() && statSync(file).size >= 4096 ? statSync(file).size : 2 ** 30);
  const base: BenchJob = {
    filename: file, engine: '', rw: mode.rw, bs: opts.bs ?? 4096, iodepth: opts.iodepth ?? 64, numjobs: 1,
    size, runtimeMs: opts.runtime ?? 10_000, timeBased: true, direct: opts.direct ?? true, invalidate: true,
    force: opts.force ?? false,
  };
  checkJob(base, { option: opts.filename === file ? '--filename' : 'job file', output: true });
  const signal = interruption();
  type Line = { engine: string; mode: string; bs: number; iodepth: number; iops?: number; unavailable?: string; partial?: boolean };
  const out: Line[] = [];
  for (const engine of modeEngines) {
    if (signal.aborted) break;
    const r = await runJob({ ...base, engine }, { show: !json, label: engine });
    const shape = { engine, mode: key, bs: base.bs, iodepth: base.iodepth };
    const line: Line = r.unavailable ? { ...shape, unavailable: r.unavailable } :
      { ...shape, iops: Math.round(resultIops(r)), ...(r.interrupted ? { partial: true } : {}) };
    out.push(line);
    if (!json) {
      process.stdout.write(line.unavailable ? `${engine}: ${mode.words} unavailable: ${line.unavailable}\n` :
        `${engine}: ${mode.words} operates with bs ${base.bs / 1024} KB, IOPS: ${line.iops} /seconds` +
        `${r.interrupted ? ' (partial)' : ''}\n`);
    }
  }
  outputJson({ json, output: opts.output }, {
    mode: key, engines: out, machine: machineInfo(file), command: commandLine(),
    ...(signal.aborted ? { interrupted: true } : {}),
  });
  if (signal.aborted) markInterrupted();
}
