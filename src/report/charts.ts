// The charts of a report, as Vega-Lite specs: what each input shows (IOPS and p99 against the
// swept option, completion-latency percentile curves, bench latency's percentiles per engine and
// direction, echo req/s against clients, IPC bytes/s
// against message size with the memcpy line, bench api ops/s, its channel group's messages/s and
// its ping-pong group's round trips, bench http req/s and CPU per request against connections).
// Every chart has axis titles
// with units, a legend, and the machine and command that produced its figures.
import { formatBytes } from '../format.js';
import type { ApiInput, BenchInput, EchoInput, HttpInput, IpcInput, LatencyInput, Machine, StorageInput, StoragePoint } from './inputs.js';
import { showText } from '../show-bytes.js';

export interface Chart {
  id: string;
  title: string;
  /** The Vega mark each datum becomes (the browser test counts them). */
  markType: 'symbol' | 'rect';
  /** How many marks of that type the chart draws: one per datum. */
  marks: number;
  spec: Record<string, unknown>;
}

export function describeMachine(m: Machine | undefined): string {
  if (!m) return 'machine: not recorded in the JSON';
  const parts = [m.cpuModel, m.cores !== undefined ? `${m.cores} cores` : undefined,
    m.memoryBytes !== undefined ? `${formatBytes(m.memoryBytes)} memory` : undefined, m.kernel ? `kernel ${m.kernel}` : undefined,
    m.fileSystem?.type ? `${m.fileSystem.type} on ${m.fileSystem.device ?? m.fileSystem.source ?? '?'}` : undefined];
  return `machine: ${parts.filter((p) => p !== undefined).join(', ')}`;
}

/** The command as a shell would read it back. */
export function describeCommand(argv: string[] | undefined): string {
  if (!argv || argv.length === 0) return 'command: not recorded in the JSON';
  return `command: ${argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ')}`;
}

/** Text cut into lines of at most width characters (subtitles do not wrap by themselves). */
function wrap(text: string, width = 110): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + word.length + 1 > width) {
      lines.push(line);
      line = `  ${word}`;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(line);
  return lines;
}

function provenance(input: BenchInput): string[] {
  const partial = input.partial ? [`PARTIAL: ${input.partial}; the figures cover what finished`] : [];
  return [...partial, ...wrap(describeMachine(input.machine)), ...wrap(describeCommand(input.command)), `file: ${showText(input.file)}`];
}

interface Axis { field: string; title: string; log?: 2 | 10; format?: string; values?: number[]; labelExpr?: string }

/** Vega expression: a byte count in binary units (512 B, 4 KiB, 1 MiB), as iolab prints sizes. */
const bytesLabel = "datum.value >= 1073741824 ? format(datum.value / 1073741824, '~r') + ' GiB' : " +
  "datum.value >= 1048576 ? format(datum.value / 1048576, '~r') + ' MiB' : " +
  "datum.value >= 1024 ? format(datum.value / 1024, '~r') + ' KiB' : datum.value + ' B'";

/** The distinct x values of the data: the ticks sit on the measured points. */
const ticksAt = (values: Record<string, unknown>[]) => [...new Set(values.map((v) => Number(v.x)))].sort((a, b) => a - b);

function axis(a: Axis): Record<string, unknown> {
  return {
    field: a.field, type: 'quantitative',
    scale: a.log ? { type: 'log', base: a.log } : { zero: true },
    axis: { title: a.title, ...(a.format ? { format: a.format } : {}), ...(a.values ? { values: a.values } : {}),
      ...(a.labelExpr ? { labelExpr: a.labelExpr } : {}), grid: true },
  };
}

/** Lines with a point per datum; color per series; with dash (its title and its values, the
 * first drawn solid with circles) a second legend tells lines apart by dashes and shapes. */
function lineSpec(title: string, subtitle: string[], values: Record<string, unknown>[], x: Axis, y: Axis,
  seriesTitle: string, dash?: { title: string; domain: string[] }): Record<string, unknown> {
  return {
    width: 560, height: 300,
    title: { text: title, subtitle, anchor: 'start', subtitleFontSize: 10, subtitleColor: '#555' },
    data: { values },
    mark: { type: 'line', point: { filled: true, size: 45 }, strokeWidth: 2 },
    encoding: {
      x: axis(x), y: axis(y),
      color: { field: 'series', type: 'nominal', legend: { title: seriesTitle, labelLimit: 240 } },
      ...(dash ? {
        strokeDash: { field: 'dash', type: 'nominal', legend: { title: dash.title, labelLimit: 240 },
          scale: { domain: dash.domain, range: dash.domain.map((_, i) => (i === 0 ? [1, 0] : [6 - i, 3])) } },
        shape: { field: 'dash', type: 'nominal', legend: { title: dash.title, labelLimit: 240 },
          scale: { domain: dash.domain, range: dash.domain.map((_, i) => ['circle', 'square', 'triangle-up'][i % 3]) } },
      } : {}),
    },
    config: { font: 'sans-serif', view: { stroke: '#ddd' } },
  };
}

const sweepable = ['iodepth', 'bs', 'numjobs'] as const;
type Sweepable = typeof sweepable[number];
const optionTitle: Record<Sweepable, string> = {
  iodepth: 'iodepth (I/Os in flight per job)', bs: 'block size (bytes)', numjobs: 'numjobs (threads)',
};

function describePoint(p: StoragePoint, except: Sweepable): string {
  const parts = [p.rw, except !== 'bs' ? `bs ${formatBytes(p.bs)}` : '', except !== 'iodepth' ? `iodepth ${p.iodepth}` : '',
    except !== 'numjobs' ? `numjobs ${p.numjobs}` : '', p.direction === 'write' && /rw|readwrite/.test(p.rw) ? 'writes' : ''];
  return parts.filter((s) => s !== '').join(', ');
}

/** Latencies are charted in seconds with SI prefixes (10n, 1µ, 2.5m): one axis spans ns to ms. */
const latencyTitle = (what: string) => `${what} (seconds, log scale; 1µ = 1 µs)`;

const seriesOf = (p: StoragePoint) => ({ series: p.engine, dash: p.source === 'fio' ? 'fio' : 'iolab' });

function storageCharts(input: StorageInput, n: number): Chart[] {
  const points = input.points;
  if (points.length === 0) return [];
  const varies = (k: Sweepable) => new Set(points.map((p) => p[k])).size > 1;
  const x: Sweepable = varies('iodepth') || !sweepable.some(varies) ? 'iodepth' : sweepable.find(varies)!;
  const groups = new Map<string, StoragePoint[]>();
  for (const p of points) {
    const key = describePoint(p, x);
    groups.set(key, [...(groups.get(key) ?? []), p]);
  }
  const withFio = points.some((p) => p.source === 'fio');
  const byWhom = withFio ? { title: 'run by', domain: ['iolab', 'fio'] } : undefined;
  const charts: Chart[] = [];
  let g = 0;
  for (const [label, group] of groups) {
    const sub = provenance(input);
    const iops = group.map((p) => ({ x: p[x], y: p.iops, ...seriesOf(p) }));
    const xAxis: Axis = { field: 'x', title: optionTitle[x], log: 2, values: ticksAt(iops), ...(x === 'bs' ? { labelExpr: bytesLabel } : {}) };
    charts.push({ id: `f${n}-iops-${g}`, title: `IOPS against ${x}: ${label}`, markType: 'symbol', marks: iops.length,
      spec: lineSpec(`IOPS against ${x}, per engine${withFio ? ', iolab and fio' : ''} (${label})`, sub, iops, xAxis,
        { field: 'y', title: 'IOPS (I/Os per second)', format: '~s' }, 'engine', byWhom) });
    const p99 = group.filter((p) => p.clatP99Ns !== undefined).map((p) => ({ x: p[x], y: p.clatP99Ns! / 1e9, ...seriesOf(p) }));
    if (p99.length > 0) {
      charts.push({ id: `f${n}-p99-${g}`, title: `p99 completion latency against ${x}: ${label}`, markType: 'symbol', marks: p99.length,
        spec: lineSpec(`p99 completion latency against ${x}, per engine (${label})`, sub, p99, xAxis,
          { field: 'y', title: latencyTitle('p99 completion latency'), log: 10, format: '~s' }, 'engine', byWhom) });
    }
    // Percentile curves at the sweep's lowest and highest point (all points would crowd it).
    const xs = [...new Set(group.map((p) => p[x]))].sort((a, b) => a - b);
    for (const at of [...new Set([xs[0], xs[xs.length - 1]])]) {
      const curves = group.filter((p) => p[x] === at && p.percentiles.length > 1).flatMap((p) => p.percentiles
        .filter((q) => q.p >= 1 && q.p <= 99.99).map((q) => ({ x: 1 / (1 - q.p / 100), y: q.ns / 1e9, ...seriesOf(p), p: q.p })));
      if (curves.length === 0) continue;
      charts.push({ id: `f${n}-pct-${g}-${at}`, title: `completion-latency percentiles at ${x} ${at}: ${label}`, markType: 'symbol',
        marks: curves.length,
        spec: lineSpec(`Completion-latency percentiles p1 to p99.99, per engine (${x} ${x === 'bs' ? formatBytes(at) : at}; ${label})`, sub, curves,
          percentileAxis,
          { field: 'y', title: latencyTitle('completion latency'), log: 10, format: '~s' }, 'engine', byWhom) });
    }
    g++;
  }
  return charts;
}

/** The percentile axis of every latency curve: a log scale of 1 / (1 - p), so the tail spreads out. */
const percentileAxis: Axis = { field: 'x', title: 'percentile (log scale of 1 / (1 - p))', log: 10, values: [1 / 0.99, 2, 10, 100, 1000, 10000],
  labelExpr: "format(100 - 100 / datum.value, '.4~f') + '%'" };

function latencyCharts(input: LatencyInput, n: number): Chart[] {
  if (input.points.length === 0) return [];
  const values = input.points.map((q) => ({ x: 1 / (1 - q.p / 100), y: q.ns / 1e9, series: q.engine, dash: q.direction, p: q.p }));
  const how = [input.bs !== undefined ? `${formatBytes(input.bs)} I/Os` : '', 'QD 1',
    input.direct === undefined ? '' : input.direct ? 'O_DIRECT' : 'page cache'].filter((s) => s !== '').join(', ');
  return [{ id: `f${n}-latency`, title: `read and write latency percentiles per engine (${how})`, markType: 'symbol', marks: values.length,
    spec: lineSpec(`Latency p50, p99, p99.9 per engine, reads and writes (${how}; submission to completion)`, provenance(input), values,
      { ...percentileAxis, values: [2, 100, 1000] }, { field: 'y', title: latencyTitle('latency'), log: 10, format: '~s' }, 'engine',
      { title: 'direction', domain: ['read', 'write'] }) }];
}

function echoCharts(input: EchoInput, n: number): Chart[] {
  const size = input.lengthBytes !== undefined ? `, ${formatBytes(input.lengthBytes)} messages` : '';
  const charts: Chart[] = [];
  if (input.cpu.length > 0) {
    const generators = [...new Set(input.cpu.map((p) => p.generator))];
    const values = input.cpu.map((p) => ({ x: p.clients, y: p.serverUsPerReq, series: p.server, dash: p.generator }));
    charts.push({ id: `f${n}-echo-cpu`, title: 'echo server CPU per request against clients', markType: 'symbol', marks: values.length,
      spec: lineSpec(`Echo server CPU per request against clients, per server and generator${size}`, provenance(input), values,
        { field: 'x', title: 'clients (concurrent connections, log scale)', log: 10, values: ticksAt(values) },
        { field: 'y', title: 'server CPU µs per request (median of rounds; lower is better)', format: '~r' }, 'server',
        { title: 'load generator', domain: generators }) });
  }
  if (input.points.length === 0) return charts;
  const values = input.points.map((p) => ({ x: p.clients, y: p.reqPerSec, series: p.server }));
  return [...charts, { id: `f${n}-echo`, title: 'echo requests/s against clients', markType: 'symbol', marks: values.length,
    spec: lineSpec(`Echo requests/s against clients, per server${size}`, provenance(input), values,
      { field: 'x', title: 'clients (concurrent connections, log scale)', log: 10, values: ticksAt(values) },
      { field: 'y', title: 'requests/s (median of rounds)', format: '~s' }, 'server') }];
}

function ipcCharts(input: IpcInput, n: number): Chart[] {
  if (input.rows.length === 0) return [];
  const modes = new Map<string, Set<string>>();
  for (const r of input.rows) modes.set(r.transport, (modes.get(r.transport) ?? new Set()).add(r.mode ?? ''));
  const name = (t: string, m?: string) => ((modes.get(t)?.size ?? 0) > 1 && m ? `${t} ${m}` : t);
  const values = [
    ...input.rows.map((r) => ({ x: r.messageBytes, y: r.bytesPerSec, series: name(r.transport, r.mode), dash: 'transport' })),
    ...input.memcpy.map((m) => ({ x: m.messageBytes, y: m.bytesPerSec, series: 'memcpy', dash: 'memcpy (ceiling)' })),
  ];
  return [{ id: `f${n}-ipc`, title: 'IPC bytes/s against message size', markType: 'symbol', marks: values.length,
    spec: lineSpec('IPC bytes/s against message size, per transport, with memcpy', provenance(input), values,
      { field: 'x', title: 'message size (log scale)', log: 2, values: ticksAt(values), labelExpr: bytesLabel },
      { field: 'y', title: 'bytes/s (log scale; G = 10⁹)', log: 10, format: '~s' }, 'transport',
      { title: 'line', domain: ['transport', 'memcpy (ceiling)'] }) }];
}

/** One horizontal bar per row: bench api's charts. */
function barChart(input: ApiInput, id: string, title: string, text: string, values: { contender: string; y: number; series: string }[],
  yTitle: string, x: Record<string, unknown>): Chart {
  return { id, title, markType: 'rect', marks: values.length,
    spec: {
      width: 560, height: Math.max(120, values.length * 22),
      title: { text, subtitle: provenance(input), anchor: 'start', subtitleFontSize: 10, subtitleColor: '#555' },
      data: { values },
      mark: { type: 'bar' },
      encoding: {
        y: { field: 'contender', type: 'nominal', sort: null, axis: { title: yTitle } },
        x: { field: 'y', type: 'quantitative', ...x },
        color: { field: 'series', type: 'nominal', legend: { title: 'contender' } },
      },
      config: { font: 'sans-serif', view: { stroke: '#ddd' } },
    } };
}

function apiCharts(input: ApiInput, n: number): Chart[] {
  const charts: Chart[] = [];
  const ops = input.rows.filter((r) => r.messageBytes === undefined);
  if (ops.length > 0) {
    charts.push(barChart(input, `f${n}-api`, 'bench api ops/s per contender', 'What the JS-facing APIs cost: operations/s per contender (@ in flight)',
      ops.map((r) => ({ contender: `${r.contender} @${r.inflight}`, y: r.opsPerSec, series: r.contender })),
      'contender @ operations in flight', { axis: { title: 'operations/s (median of rounds)', format: '~s', grid: true } }));
  }
  // the channel group: messages/s from 64 B (millions) to memcpy's 1 MiB (thousands): a log scale
  const messages = input.rows.filter((r) => r.messageBytes !== undefined);
  if (messages.length > 0) {
    charts.push(barChart(input, `f${n}-api-channel`, 'bench api messages/s per contender and size',
      'Messages to another process or thread: messages/s per contender and message size',
      messages.map((r) => ({ contender: `${r.contender} ${formatBytes(r.messageBytes!)}`, y: r.opsPerSec, series: r.contender })),
      'contender, message size', { scale: { type: 'log' }, axis: { title: 'messages/s (median of rounds, log scale)', format: '~s', grid: true } }));
  }
  // the ping-pong group: p50 and p99 round trip per path against the message size
  if (input.roundTrips.length > 0) {
    const values = input.roundTrips.flatMap((r) => [
      { x: r.messageBytes, y: r.p50Us / 1e6, series: r.contender, dash: 'p50' },
      ...(r.p99Us !== undefined ? [{ x: r.messageBytes, y: r.p99Us / 1e6, series: r.contender, dash: 'p99' }] : []),
    ]);
    charts.push({ id: `f${n}-api-pingpong`, title: 'bench api round trip per path and message size', markType: 'symbol', marks: values.length,
      spec: lineSpec('Round trip of one message to a child process and back, per path: p50 and p99 against message size', provenance(input), values,
        { field: 'x', title: 'message size (log scale)', log: 2, values: ticksAt(values), labelExpr: bytesLabel },
        { field: 'y', title: latencyTitle('round trip time'), log: 10, format: '~s' }, 'path', { title: 'percentile', domain: ['p50', 'p99'] }) });
  }
  return charts;
}

/** bench http: req/s and the server's CPU per request against connections, a line per server
 * (whatever servers the JSON has: ring beside node, fastify where it ran) and requests in flight. */
function httpCharts(input: HttpInput, n: number): Chart[] {
  if (input.points.length === 0) return [];
  const inFlight = [...new Set(input.points.map((p) => p.inFlight))].sort((a, b) => a - b).map((k) => `${k} per connection`);
  const per = input.durationSec !== undefined ? `, ${input.durationSec} s per run` : '';
  const x = (values: Record<string, unknown>[]): Axis => ({ field: 'x', title: 'connections (log scale)', log: 10, values: ticksAt(values) });
  const rate = input.points.map((p) => ({ x: p.connections, y: p.reqPerSec, series: p.server, dash: `${p.inFlight} per connection` }));
  const charts: Chart[] = [{ id: `f${n}-http`, title: 'HTTP requests/s against connections', markType: 'symbol', marks: rate.length,
    spec: lineSpec(`HTTP requests/s against connections, per server, under wrk${per}`, provenance(input), rate, x(rate),
      { field: 'y', title: 'requests/s (median of rounds)', format: '~s' }, 'server', { title: 'in flight', domain: inFlight }) }];
  const cpu = input.points.filter((p) => p.serverUsPerReq !== undefined)
    .map((p) => ({ x: p.connections, y: p.serverUsPerReq!, series: p.server, dash: `${p.inFlight} per connection` }));
  if (cpu.length > 0) {
    charts.push({ id: `f${n}-http-cpu`, title: 'HTTP server CPU per request against connections', markType: 'symbol', marks: cpu.length,
      spec: lineSpec(`HTTP server CPU per request against connections, per server${per}`, provenance(input), cpu, x(cpu),
        { field: 'y', title: 'server CPU µs per request (median of rounds; lower is better)', format: '~r' }, 'server',
        { title: 'in flight', domain: inFlight }) });
  }
  return charts;
}

/** The charts of one input (n: its place in the report, for unique ids). */
export function chartsOf(input: BenchInput, n: number): Chart[] {
  switch (input.kind) {
    case 'storage': return storageCharts(input, n);
    case 'latency': return latencyCharts(input, n);
    case 'echo': return echoCharts(input, n);
    case 'ipc': return ipcCharts(input, n);
    case 'api': return apiCharts(input, n);
    case 'http': return httpCharts(input, n);
  }
}
