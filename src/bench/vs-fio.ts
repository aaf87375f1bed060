// `bench iops --vs-fio`: each job (engine, or engine x sweep point) in iolab and in fio,
// alternating who goes first, --repeat rounds; medians of IOPS and of CPU time per I/O, and
// their ratios iolab/fio. fio keeps its latency recording on, as iolab records every I/O.
import { native, type BenchResult } from '../native.js';
import { commandLine, UserError } from '../cli-util.js';
import { interruption, markInterrupted } from '../interrupt.js';
import { formatCount, formatNs, median, ratio, table } from '../format.js';
import { machineInfo } from './machine.js';
import { runJob } from './storage-job.js';
import { engineInfo } from './engines.js';
import { cpuPerIoUs, diskSample, diskUtil, fioDocument, fioJob } from './fio-json.js';
import { fioVersion, runFio, type FioFigures } from './fio-runner.js';
import { formatCpuPerIo, resultIops } from './storage-table.js';
import { describeJob, jobLabel, outputJson, reportInterruptedLayout, type IopsJob, type IopsRun, type PlannedJob } from './iops-plan.js';

interface Pair {
  job: IopsJob;
  point?: Record<string, string>;
  label: string;
  iolab: BenchResult[];
  fio: FioFigures[];
  unavailable?: string;
  partial?: boolean;
}

function summarize(p: Pair) {
  if (p.unavailable) return { engine: p.job.engine, point: p.point, unavailable: p.unavailable };
  const iolabIops = median(p.iolab.map(resultIops));
  const fioIops = median(p.fio.map((f) => f.iops));
  const iolabCpu = median(p.iolab.map(cpuPerIoUs));
  const fioCpu = median(p.fio.map((f) => f.cpuPerIoUs));
  return {
    engine: p.job.engine,
    point: p.point,
    rounds: p.iolab.map((r, i) => ({ iolab_iops: resultIops(r), fio_iops: p.fio[i]?.iops, iolab_cpu_us_per_io: cpuPerIoUs(r),
      fio_cpu_us_per_io: p.fio[i]?.cpuPerIoUs })),
    iolab_iops: iolabIops,
    fio_iops: fioIops,
    ratio: fioIops > 0 ? iolabIops / fioIops : NaN,
    iolab_cpu_us_per_io: iolabCpu,
    fio_cpu_us_per_io: fioCpu,
    cpu_ratio: fioCpu > 0 ? iolabCpu / fioCpu : NaN,
    iolab_clat_p99_ns: median(p.iolab.map((r) => (r.read.ios ? r.read : r.write).clat.percentiles[12])),
    fio_clat_p99_ns: median(p.fio.map((f) => f.clatP99)),
    // what fio was told, as its JSON lists it: the same job as iolab's "job options" above
    fio_job_options: p.fio[0]?.job['job options'],
    ...(p.partial ? { partial: true } : {}),
  };
}

export async function runVsFio(plan: IopsRun, jobs: PlannedJob[]): Promise<void> {
  const version = await fioVersion();
  if (!version) throw new UserError('--vs-fio needs fio on PATH (apt-get install fio)');
  const { base } = plan;
  if (base.verify) throw new UserError('--vs-fio runs fio on the same file, which overwrites the verify pattern: drop --verify');
  const testOnly = plan.engines.find((e) => engineInfo(e)?.testOnly);
  if (testOnly) throw new UserError(`--vs-fio: fio has no engine ${testOnly} (a test-only engine)`);
  const signal = interruption();
  const machine = machineInfo(base.filename);
  const started = Date.now();
  const disk0 = diskSample(machine.fileSystem?.device);
  const writes = base.rw !== 'read' && base.rw !== 'randread';
  const pairs: Pair[] = jobs.map(({ job, point }) => ({
    job, point, iolab: [], fio: [],
    label: jobLabel(job.engine, point, job.name),
  }));
  rounds: for (let round = 0; round < plan.repeat; round++) {
    for (const p of pairs) {
      if (p.unavailable) continue;
      const ours = async () => {
        const r = await runJob(p.job, { show: !plan.json, label: `${p.label} iolab ${round + 1}/${plan.repeat}` });
        if (r.unavailable) p.unavailable = r.unavailable;
        else if (r.interrupted) {
          reportInterruptedLayout(p.job, r);
          if (r.read.ios + r.write.ios > 0) p.iolab.push(r);
          p.partial = true;
        } else p.iolab.push(r);
      };
      const theirs = async () => {
        if (p.unavailable || signal.aborted) return;
        // the size iolab's run addressed (a whole foreign file or device without --size): fio's too
        const f = await runFio({ ...p.job, size: p.iolab.find((r) => r.size > 0)?.size ?? p.job.size });
        if (writes) native.benchMarkWritten(p.job.filename);  // fio wrote into iolab's file on its behalf
        if (signal.aborted) p.partial = true;
        else p.fio.push(f);
      };
      // the first run of a round lays the file out; later rounds alternate who goes first
      if (round % 2 === 0) {
        await ours();
        await theirs();
      } else {
        await theirs();
        if (!signal.aborted) await ours();
      }
      if (signal.aborted) break rounds;
    }
  }
  const summary = pairs.map(summarize);
  const interrupted = signal.aborted;
  const entries = pairs.map((p) => {
    const mid = p.iolab.length ? [...p.iolab].sort((a, b) => resultIops(a) - resultIops(b))[p.iolab.length >> 1] : undefined;
    return fioJob({ job: p.job, point: p.point, result: p.unavailable ? { unavailable: p.unavailable } as BenchResult : mid });
  });
  const doc = fioDocument(started, entries, diskUtil(disk0, diskSample(machine.fileSystem?.device)), {
    machine, command: commandLine(), vs_fio: { fio: version, repeat: plan.repeat, engines: summary },
    ...(interrupted ? { interrupted: true } : {}),
  });
  outputJson(plan, doc);
  if (!plan.json) {
    process.stdout.write(`iolab bench iops --vs-fio (${version}, median of ${plan.repeat} rounds): ${describeJob(base, plan.sweep)} file=${base.filename}\n`);
    const rows = summary.map((s, i) => {
      const label = `${pairs[i].label}${pairs[i].partial ? ' (partial)' : ''}`;
      if ('unavailable' in s && s.unavailable) return [label, `unavailable: ${s.unavailable}`];
      const v = s as Exclude<typeof s, { unavailable: string }> & Record<string, number>;
      return [label, formatCount(v.iolab_iops), formatCount(v.fio_iops), ratio(v.iolab_iops, v.fio_iops),
        formatCpuPerIo(v.iolab_cpu_us_per_io), formatCpuPerIo(v.fio_cpu_us_per_io), ratio(v.iolab_cpu_us_per_io, v.fio_cpu_us_per_io),
        formatNs(v.iolab_clat_p99_ns), formatNs(v.fio_clat_p99_ns)];
    });
    process.stdout.write(table(['engine', 'iolab IOPS', 'fio IOPS', 'IOPS iolab/fio', 'iolab CPU/IO', 'fio CPU/IO',
      'CPU/IO iolab/fio', 'iolab clat p99', 'fio clat p99'], rows));
  }
  if (interrupted) markInterrupted();
}
