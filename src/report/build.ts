// What `iolab report` does: reads each benchmark JSON by its shape and renders its charts
// (Vega-Lite -> SVG in Node) into the page (written by src/write-target.ts, as every output).
import { closeSync, constants, fstatSync, openSync, readFileSync, type Stats } from 'node:fs';
import { UserError } from '../cli-util.js';
import { chartsOf } from './charts.js';
import { reportHtml, type RenderedInput } from './html.js';
import { readBenchJson, type BenchInput } from './inputs.js';
import { renderSvg } from './render.js';

/** What a file that is not a regular file is, for the one line that refuses it. */
function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a file';
}

/** A regular file's text. Opened without blocking and checked on the open fd: a FIFO would
 * wait for a writer forever, a device could read forever. */
function readRegularFile(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new UserError(`${file}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new UserError(`${file}: is a folder`);
    if (!st.isFile()) throw new UserError(`${file}: not a regular file (${kindOf(st)}); name a benchmark JSON file`);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** Reads one input; every way it can be wrong is one line naming the file. */
export function readInput(file: string): BenchInput {
  const text = readRegularFile(file);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UserError(`${file}: not JSON (${(err as Error).message.replace(/\s+/g, ' ')})`);
  }
  const input = readBenchJson(file, value);
  if (!input) {
    throw new UserError(`${file}: not a benchmark JSON iolab can chart (bench iops or fio --output-format=json, bench latency, bench echo, bench ipc, bench api)`);
  }
  return input;
}

export async function buildReport(files: string[]): Promise<{ html: string; rendered: RenderedInput[] }> {
  const inputs = files.map(readInput);
  const rendered: RenderedInput[] = [];
  for (const [i, input] of inputs.entries()) {
    const charts = [];
    for (const chart of chartsOf(input, i)) charts.push({ chart, svg: await renderSvg(chart) });
    rendered.push({ input, charts });
  }
  return { html: reportHtml(rendered, new Date()), rendered };
}
