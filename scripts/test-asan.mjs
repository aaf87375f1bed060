// npm run test:asan: the whole vitest suite against the sanitized addon (build it first if
// missing). Extra arguments go to vitest.
import { spawnSync, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { asanEnv } from './asan-env.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (!existsSync(join(root, 'build-asan/build/Release/iolab.node'))) {
  execFileSync(process.execPath, [join(root, 'scripts/build-asan.mjs')], { stdio: 'inherit' });
}
const vitest = join(root, 'node_modules/vitest/vitest.mjs');
const run = spawnSync(process.execPath, [vitest, 'run', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: asanEnv(),
});
process.exit(run.status ?? 1);
