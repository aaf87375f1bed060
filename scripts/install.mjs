// npm's install step: the package's prebuilt addon when it loads here (linux-x64, glibc), else a
// build from source (the checkout always builds: it carries no prebuilt addon). A missing
// compiler or header stops the build with one line that names the Debian packages to install.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The prebuilt addon node-gyp-build would pick here, when there is one and it loads. */
function prebuiltLoads() {
  if (!existsSync(join(root, 'prebuilds'))) return false;
  let path;
  try {
    path = createRequire(import.meta.url)('node-gyp-build').path(root);
  } catch {
    return false;
  }
  // loaded in a child: a failed dlopen must not be this process's problem
  const child = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(path)})`], { stdio: 'ignore' });
  return child.status === 0;
}

if (prebuiltLoads()) process.exit(0);
try {
  execFileSync(process.execPath, [join(root, 'scripts/check-deps.mjs')], { stdio: 'inherit' });
} catch {
  process.exit(1);
}
const build = spawnSync('node-gyp', ['rebuild'], { cwd: root, stdio: 'inherit' });
if (build.error) {
  console.error(`iolab: cannot build the addon: node-gyp did not start (${build.error.message})`);
  process.exit(1);
}
process.exit(build.status ?? 1);
