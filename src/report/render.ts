// Vega-Lite spec -> Vega -> SVG text, in Node: no browser, no canvas, no network (the data is
// inline in each spec and the loader is never asked for anything).
import { compile, type TopLevelSpec } from 'vega-lite';
import { parse, View } from 'vega';
import type { Chart } from './charts.js';

export async function renderSvg(chart: Chart): Promise<string> {
  const vegaSpec = compile(chart.spec as unknown as TopLevelSpec).spec;
  const view = new View(parse(vegaSpec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
