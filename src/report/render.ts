// Vega-Lite spec -> Vega -> SVG text, in Node: no browser, no canvas, no network (the data is
// inline in each spec and the loader is never asked for anything). vega and vega-lite are
// optional peer dependencies (a library user does not get their hundred-odd packages; the
// checkout has them as devDependencies), loaded on first use: every other iolab command starts
// without them, and `report` without them says in one line what to install.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TopLevelSpec } from 'vega-lite';
import { UserError } from '../cli-util.js';
import type { Chart } from './charts.js';

type ChartLibraries = [typeof import('vega'), typeof import('vega-lite')];
let libraries: Promise<ChartLibraries> | undefined;

/** A path as one shell word. */
const shellWord = (s: string): string => (/^[\w@%+=:,./^-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`);

/** The command that installs vega and vega-lite where this iolab finds them. */
export function chartLibrariesInstallCommand(packageRoot: string): string {
  const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { peerDependencies?: Record<string, string> };
  const specs = ['vega', 'vega-lite'].map((name) => `${name}@${pkg.peerDependencies?.[name] ?? 'latest'}`).join(' ');
  const modules = dirname(packageRoot);
  if (basename(modules) !== 'node_modules') return `cd ${shellWord(packageRoot)} && npm ci`; // a checkout
  const owner = dirname(modules);
  // npm install -g puts packages in <prefix>/lib/node_modules, where no package.json is; a
  // project's node_modules has one beside it
  if (!existsSync(join(owner, 'package.json')) && basename(owner) === 'lib') {
    return `npm install -g --prefix ${shellWord(dirname(owner))} ${specs}`;
  }
  return `cd ${shellWord(owner)} && npm install ${specs}`;
}

/** vega and vega-lite, or a UserError naming the command that installs them. */
export function loadChartLibraries(): Promise<ChartLibraries> {
  libraries ??= Promise.all([import('vega'), import('vega-lite')]).catch((err: unknown) => {
    libraries = undefined;
    const missing = (err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' &&
      /Cannot find package '(vega|vega-lite)'/.test((err as Error).message);
    if (!missing) throw err;
    const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
    throw new UserError(`report draws its charts with vega and vega-lite, which are not installed: ${chartLibrariesInstallCommand(packageRoot)}`);
  });
  return libraries;
}

export async function renderSvg(chart: Chart): Promise<string> {
  const [vega, vegaLite] = await loadChartLibraries();
  const vegaSpec = vegaLite.compile(chart.spec as unknown as TopLevelSpec).spec;
  const view = new vega.View(vega.parse(vegaSpec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
