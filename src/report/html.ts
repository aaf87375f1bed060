// One self-contained HTML page: the charts as inline SVG, the ratio tables, the machine and
// command of every input. No script, no external style, font or image; a Content-Security-
// Policy that refuses any load makes that hold even if something slipped in.
import { formatCount } from '../format.js';
import { describeCommand, describeMachine, type Chart } from './charts.js';
import type { BenchInput, Ratio } from './inputs.js';

export interface RenderedInput {
  input: BenchInput;
  charts: { chart: Chart; svg: string }[];
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]!));
}

const kindTitle: Record<BenchInput['kind'], string> = {
  storage: 'storage (bench iops / fio)', latency: 'storage latency (bench latency)', echo: 'echo servers (bench echo)', ipc: 'IPC transports (bench ipc)', api: 'JS API cost (bench api)',
  http: 'HTTP servers (bench http)',
};

function ratioTables(ratios: Ratio[]): string {
  const tables = new Map<string, Ratio[]>();
  for (const r of ratios) tables.set(r.table, [...(tables.get(r.table) ?? []), r]);
  return [...tables].map(([title, rows]) => `<table class="ratios"><caption>${escapeHtml(title)}</caption>
<thead><tr><th>what</th><th>ratio</th>${rows.some((r) => r.note) ? '<th></th>' : ''}</tr></thead><tbody>
${rows.map((r) => `<tr><td>${escapeHtml(r.name)}</td><td class="num">${r.value.toFixed(2)}x</td>${rows.some((x) => x.note) ? `<td>${escapeHtml(r.note ?? '')}</td>` : ''}</tr>`).join('\n')}
</tbody></table>`).join('\n');
}

function section(r: RenderedInput, i: number): string {
  const { input } = r;
  const figures = r.charts.map(({ chart, svg }) => `<figure class="chart" id="${escapeHtml(chart.id)}" data-mark-type="${chart.markType}" data-marks="${chart.marks}">
${svg}
<figcaption>${escapeHtml(chart.title)} — ${formatCount(chart.marks)} points</figcaption>
</figure>`).join('\n');
  return `<section id="input-${i}">
<h2>${escapeHtml(kindTitle[input.kind])}: ${escapeHtml(input.file)}${input.partial ? ` (partial: ${escapeHtml(input.partial)})` : ''}</h2>
<p class="provenance">${escapeHtml(describeMachine(input.machine))}<br>${escapeHtml(describeCommand(input.command))}</p>
${figures || '<p>No figures to chart in this file (every job failed or was unavailable).</p>'}
${ratioTables(input.ratios)}
</section>`;
}

const style = `
body { font: 14px/1.45 sans-serif; color: #222; margin: 24px auto; max-width: 1000px; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 17px; border-bottom: 1px solid #ccc; padding-bottom: 4px; margin-top: 32px; }
.provenance { color: #555; font-size: 12px; }
figure.chart { margin: 18px 0; } figure.chart svg { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: 12px; }
table.ratios { border-collapse: collapse; margin: 12px 0; font-size: 13px; }
table.ratios caption { text-align: left; font-weight: bold; padding: 4px 0; }
table.ratios th, table.ratios td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
table.ratios td.num { text-align: right; font-variant-numeric: tabular-nums; }
nav li { margin: 2px 0; }`;

export function reportHtml(rendered: RenderedInput[], generated: Date): string {
  const toc = rendered.flatMap((r) => r.charts.map(({ chart }) => `<li><a href="#${escapeHtml(chart.id)}">${escapeHtml(chart.title)}</a></li>`));
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>iolab report</title>
<style>${style}</style>
</head>
<body>
<h1>iolab report</h1>
<p>${rendered.length} benchmark file(s), written ${escapeHtml(generated.toISOString())}. Charts: Vega-Lite, rendered to SVG when the report was written.</p>
<nav><ul>
${toc.join('\n')}
</ul></nav>
${rendered.map(section).join('\n')}
</body>
</html>
`;
}
