// A build of the addon into a folder of its own, leaving build/ untouched: the folder gets a
// binding.gyp, native/, scripts/ and node_modules/ that link back to the project, so that
// node-gyp's fixed "build/" output lands in <folder>/build/. The sanitized build and the
// package's prebuilt addon are made this way.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Runs `node-gyp rebuild ...args` staged in root/folder; returns the built addon's path, or
 * exits with one line naming what failed. */
export function stagedBuild(folder, args, what) {
  const stage = join(root, folder);
  mkdirSync(stage, { recursive: true });
  for (const entry of ['binding.gyp', 'native', 'scripts', 'node_modules']) {
    const link = join(stage, entry);
    if (!existsSync(link)) symlinkSync(join('..', entry), link);
  }
  try {
    execFileSync(process.execPath, [join(root, 'scripts/check-deps.mjs')], { stdio: 'inherit' });
  } catch {
    process.exit(1);
  }
  // Build against the same headers as `npm ci` does (npm's nodedir setting, or the system's).
  const nodedir = process.env.npm_config_nodedir ||
    (existsSync('/usr/include/node/node_api.h') ? '/usr' : undefined);
  const gyp = join(root, 'node_modules/node-gyp/bin/node-gyp.js');
  try {
    execFileSync(process.execPath, [gyp, 'rebuild', ...args, ...(nodedir ? [`--nodedir=${nodedir}`] : [])],
      { cwd: stage, stdio: 'inherit' });
  } catch {
    console.error(`iolab: ${what} failed (see the compiler output above)`);
    process.exit(1);
  }
  return join(stage, 'build/Release/iolab.node');
}
