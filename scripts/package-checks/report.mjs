// `iolab report` in an installed package: without vega and vega-lite (optional peer
// dependencies) one line names the npm install to run and nothing is written; after running
// exactly that command, the report is made. In a project of its own (it gains vega's packages),
// once per Node line.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export async function checks({ installFlags, installProject, run, check }) {
  if (installFlags.includes('--ignore-scripts')) return;
  const { dir, install } = installProject('report');
  check('report: iolab installs in a project of its own', install.status === 0, install.out);
  if (install.status !== 0) return;
  const here = (file, args, options = {}) => run(file, args, { cwd: dir, ...options });
  const iolab = (args) => here('npx', ['--no-install', 'iolab', ...args]);
  const bench = iolab(['bench', 'iops', '--filename', join(dir, 'job.dat'), '--size', '1m', '--ioengine', 'psync', '--number_ios', '200', '--output', 'iops.json']);
  check('report: bench iops writes its JSON', bench.status === 0, bench.out);
  const page = join(dir, 'report.html');
  const without = iolab(['report', 'iops.json', '-o', page]);
  const hint = /^iolab: report draws its charts with vega and vega-lite, which are not installed: (.+)\n$/.exec(without.stderr)?.[1];
  const expected = `cd ${dir} && npm install vega@${peer(dir, 'vega')} vega-lite@${peer(dir, 'vega-lite')}`;
  check('report without vega: one iolab: line naming the npm install to run, exit 1, nothing written',
    without.status === 1 && without.stdout === '' && hint === expected && !existsSync(page), `${without.out}\nexpected: ${expected}`);
  if (hint !== expected) return;
  const installVega = here('sh', ['-c', hint]);
  check('report: the command it names installs vega and vega-lite', installVega.status === 0, installVega.out);
  const withVega = iolab(['report', 'iops.json', '-o', page]);
  check('report with vega: writes the page with its chart',
    withVega.status === 0 && /^wrote .*: [1-9]\d* chart\(s\) from 1 file\(s\)$/.test(withVega.stdout.trim()) && readFileSync(page, 'utf8').includes('<svg'), withVega.out);
}

/** The peer range the installed package.json gives. */
function peer(dir, name) {
  return JSON.parse(readFileSync(join(dir, 'node_modules', 'iolab', 'package.json'), 'utf8')).peerDependencies?.[name];
}
