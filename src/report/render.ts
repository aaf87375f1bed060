// Vega-Lite spec -> Vega -> SVG text, in Node: no browser, no canvas, no network (the data is
// inline in each spec and the loader is never asked for anything). vega and vega-lite are
// loaded on first use: every other iolab command starts without their hundred-odd modules.
import type { TopLevelSpec } from 'vega-lite';
import type { Chart } from './charts.js';

let libraries: Promise<[typeof import('vega'), typeof import('vega-lite')]> | undefined;

export async function renderSvg(chart: Chart): Promise<string> {
  libraries ??= Promise.all([import('vega'), import('vega-lite')]);
  const [vega, vegaLite] = await libraries;
  const vegaSpec = vegaLite.compile(chart.spec as unknown as TopLevelSpec).spec;
  const view = new vega.View(vega.parse(vegaSpec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
