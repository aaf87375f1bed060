// What `iolab report` does: reads each benchmark JSON by its shape and renders its charts
// (Vega-Lite -> SVG in Node) into the page (written by src/write-target.ts, as every output).
import { UserError } from '../cli-util.js';
import { readInputFile } from '../input-file.js';
import { chartsOf } from './charts.js';
import { reportHtml, type RenderedInput } from './html.js';
import { readBenchJson, type BenchInput } from './inputs.js';
import { renderSvg } from './render.js';

/** Reads one input; every way it can be wrong is one line naming the file. */
export function readInput(file: string): BenchInput {
  const text = readInputFile(file, 'a benchmark JSON file').toString('utf8');
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
