// Builds the sanitized addon (ASan + UBSan) into build-asan/, leaving build/ untouched.
// build-asan/ is a staging folder whose binding.gyp, native/, scripts/ and node_modules/ link
// back to the project, so node-gyp's fixed "build/" output lands in build-asan/build/.
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stage = join(root, 'build-asan');
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
  execFileSync(process.execPath, [gyp, 'rebuild', '--asan=1', ...(nodedir ? [`--nodedir=${nodedir}`] : [])],
    { cwd: stage, stdio: 'inherit' });
} catch {
  console.error('iolab: the sanitized build failed (see the compiler output above)');
  process.exit(1);
}
