// What `iolab report` does: reads each benchmark JSON by its shape, renders its charts
// (Vega-Lite -> SVG in Node) and writes the page, never through a symlink.
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, readlinkSync, type Stats } from 'node:fs';
import { replaceFile, UserError } from '../cli-util.js';
import { chartsOf } from './charts.js';
import { reportHtml, type RenderedInput } from './html.js';
import { readBenchJson, type BenchInput } from './inputs.js';
import { loadChartLibraries, renderSvg } from './render.js';

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

/**
 * Writes the page as the user named it: never through a symlink (refused, naming its target;
 * --force replaces the link itself), an existing file only with --force, and under a temp name
 * renamed into place so an interrupted run leaves nothing half-written.
 */
export function writeReport(path: string, html: string, force: boolean): void {
  let existing;
  try {
    existing = lstatSync(path);
  } catch {
    existing = undefined;
  }
  if (existing?.isSymbolicLink() && !force) {
    throw new UserError(`${path} is a symlink to ${readlinkSync(path)}: not writing through it (--force replaces the link itself)`);
  }
  if (existing && !existing.isSymbolicLink() && !existing.isFile()) throw new UserError(`${path} exists and is not a regular file`);
  if (existing?.isFile() && !force) throw new UserError(`${path} exists: --force replaces it`);
  replaceFile(path, html, '-o');
}

export async function buildReport(files: string[]): Promise<{ html: string; rendered: RenderedInput[] }> {
  await loadChartLibraries(); // missing ones said first, whatever the inputs chart
  const inputs = files.map(readInput);
  const rendered: RenderedInput[] = [];
  for (const [i, input] of inputs.entries()) {
    const charts = [];
    for (const chart of chartsOf(input, i)) charts.push({ chart, svg: await renderSvg(chart) });
    rendered.push({ input, charts });
  }
  return { html: reportHtml(rendered, new Date()), rendered };
}
