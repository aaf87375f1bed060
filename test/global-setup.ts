// Fails fast, with one clear line, when the addon the run needs has not been built.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export default function setup(): void {
  const sanitized = process.env.IOLAB_ASAN === '1';
  const addon = join(__dirname, '..', sanitized ? 'build-asan/build/Release/iolab.node' : 'build/Release/iolab.node');
  if (!existsSync(addon)) {
    throw new Error(`${addon} is missing: run ${sanitized ? 'npm run build:asan' : 'npm run build'} first`);
  }
}
