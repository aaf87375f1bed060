// What `iolab report` does: reads each benchmark JSON by its shape and renders its charts
// (Vega-Lite -> SVG in Node) into the page (written by src/write-target.ts, as every output).
import { statSync } from 'node:fs';
import { UserError } from '../cli-util.js';
import { showText } from '../show-bytes.js';
import { readInputFile } from '../input-file.js';
import { chartsOf } from './charts.js';
import { reportHtml, type RenderedInput } from './html.js';
import { readBenchJson, type BenchInput } from './inputs.js';
import { loadChartLibraries, renderSvg } from './render.js';

/** Reads one input; every way it can be wrong is one line naming the file. */
export function readInput(file: string): BenchInput {
  const text = readInputFile(file, 'a benchmark JSON file').toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UserError(`${showText(file)}: not JSON (${(err as Error).message.replace(/\s+/g, ' ')})`);
  }
  const input = readBenchJson(file, value);
  if (!input) {
    throw new UserError(`${showText(file)}: not a benchmark JSON iolab can chart (bench iops or fio --output-format=json, bench latency, bench echo, bench ipc, bench api, bench http)`);
  }
  return input;
}

/** The same file named twice (by another path, a link) would be charted twice: refused. */
function refuseRepeats(files: string[]): void {
  const seen = new Map<string, string>();
  for (const file of files) {
    let id: string;
    try {
      const st = statSync(file);
      id = `${st.dev}:${st.ino}`;
    } catch {
      continue;  // readInput says what is wrong with it
    }
    const first = seen.get(id);
    if (first !== undefined) {
      throw new UserError(first === file ? `${showText(file)}: given twice; name each file once`
        : `${showText(file)}: the same file as ${showText(first)}, given before; name each file once`);
    }
    seen.set(id, file);
  }
}

export async function buildReport(files: string[]): Promise<{ html: string; rendered: RenderedInput[] }> {
  refuseRepeats(files);
  await loadChartLibraries(); // missing ones said first, whatever the inputs chart
  const inputs = files.map(readInput);
  const rendered: RenderedInput[] = [];
  for (const [i, input] of inputs.entries()) {
    const charts = [];
    for (const chart of chartsOf(input, i)) charts.push({ chart, svg: await renderSvg(chart) });
    // a page without its figures is no report: fio's JSON of jobs that all failed, say
    if (charts.length === 0) throw new UserError(`${showText(files[i])}: nothing in it to chart (no job or row with figures); no page written`);
    rendered.push({ input, charts });
  }
  return { html: reportHtml(rendered, new Date()), rendered };
}
