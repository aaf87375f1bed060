// Runs before node-gyp: a missing system header stops the build with one line that names the
// Debian package to install, instead of a page of compiler errors.
import { existsSync, readdirSync } from 'node:fs';

/** A header that lives under a multiarch folder (sys/sdt.h: /usr/include/x86_64-linux-gnu/...). */
const multiarch = (header) => readdirSync('/usr/include').map((d) => `/usr/include/${d}/${header}`).find(existsSync) ?? `/usr/include/${header}`;

const needed = [
  ['/usr/include/liburing.h', 'liburing-dev'],
  ['/usr/include/libaio.h', 'libaio-dev'],
  [multiarch('sys/sdt.h'), 'systemtap-sdt-dev'],
];
const missing = needed.filter(([header]) => !existsSync(header));
if (missing.length > 0) {
  const pkgs = missing.map(([, pkg]) => pkg).join(' ');
  console.error(`iolab: cannot build the addon: ${missing.map(([h]) => h).join(', ')} missing; install it with: apt-get install ${pkgs}`);
  process.exit(1);
}
