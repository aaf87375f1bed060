// What `npm install iolab --omit=dev` puts in an empty project: at most 5 packages (iolab among
// them) and 3.75 MiB on disk (du) besides the prebuilt addon, and no command-line tools of other
// packages in node_modules/.bin. Measured in a project of its own, right after the install.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const maxPackages = 5;
const maxKiB = 3.75 * 1024; // 3 MiB until onRing, bench http, the Channel's hardening and fio's options (3208 KiB); 3.5 MiB until onRing on every core, the handoff, the CLI lab's fixes and fio 3.42's options (3640 KiB)

/** The packages under a node_modules folder, nested ones included ('@scope/name' as one). */
function installedPackages(modules) {
  const found = [];
  const visit = (dir) => {
    for (const entry of readdirSync(dir)) {
      if (entry.startsWith('.')) continue;
      if (entry.startsWith('@')) {
        for (const name of readdirSync(join(dir, entry))) add(join(dir, entry, name), `${entry}/${name}`);
      } else add(join(dir, entry), entry);
    }
  };
  const add = (path, name) => {
    found.push(name);
    try {
      if (statSync(join(path, 'node_modules')).isDirectory()) visit(join(path, 'node_modules'));
    } catch { /* no nested node_modules */ }
  };
  visit(modules);
  return found.sort();
}

export async function checks({ installFlags, installProject, run, check }) {
  if (installFlags.includes('--ignore-scripts')) return; // the same packages: measured once per line
  const { dir, install } = installProject('footprint');
  if (install.status !== 0) {
    check('footprint: iolab installs in a project of its own', false, install.out);
    return;
  }
  const modules = join(dir, 'node_modules');
  const packages = installedPackages(modules);
  check(`at most ${maxPackages} packages: ${packages.length} (${packages.join(', ')})`, packages.length <= maxPackages);
  const kib = (path) => Number(run('du', ['-sk', path]).stdout.split('\t')[0]);
  const addon = kib(join(modules, 'iolab', 'prebuilds'));
  const total = kib(modules);
  check(`at most ${maxKiB} KiB besides the prebuilt addon: ${total - addon} KiB (du -sk node_modules: ${total} KiB, the addon ${addon} KiB)`,
    addon > 0 && total - addon <= maxKiB);
  const bins = readdirSync(join(modules, '.bin')).filter((b) => b !== 'iolab' && !b.startsWith('node-gyp-build'));
  check("node_modules/.bin has no other package's tools (iolab's and node-gyp-build's only)", bins.length === 0, bins.join(' '));
}
