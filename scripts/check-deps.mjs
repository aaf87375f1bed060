// Runs before node-gyp: a missing system header stops the build with one line that names the
// Debian package to install, instead of a page of compiler errors.
import { existsSync } from 'node:fs';

const needed = [
  ['/usr/include/liburing.h', 'liburing-dev'],
  ['/usr/include/libaio.h', 'libaio-dev'],
];
const missing = needed.filter(([header]) => !existsSync(header));
if (missing.length > 0) {
  const pkgs = missing.map(([, pkg]) => pkg).join(' ');
  console.error(`iolab: cannot build the addon: ${missing.map(([h]) => h).join(', ')} missing; install it with: apt-get install ${pkgs}`);
  process.exit(1);
}
