// Before the run: fails fast, with one clear line, when the addon the run needs has not been
// built; then compiles src/ into dist/ (as the package's prepack does), because the tests run
// iolab as the package does, from dist/cli.js (test/support/cli.ts).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export default function setup(): void {
  const root = join(__dirname, '..');
  const sanitized = process.env.IOLAB_ASAN === '1';
  const addon = join(root, sanitized ? 'build-asan/build/Release/iolab.node' : 'build/Release/iolab.node');
  if (!existsSync(addon)) {
    throw new Error(`${addon} is missing: run ${sanitized ? 'npm run build:asan' : 'npm run build'} first`);
  }
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')],
    { cwd: root, stdio: 'inherit' });
}
