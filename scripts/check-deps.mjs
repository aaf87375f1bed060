// Runs before node-gyp: a missing compiler or system header stops the build with one line that
// names the Debian packages to install, instead of a page of compiler errors.
import { existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** A header that lives under a multiarch folder (sys/sdt.h: /usr/include/x86_64-linux-gnu/...). */
const multiarch = (header) => readdirSync('/usr/include').map((d) => `/usr/include/${d}/${header}`).find(existsSync) ?? `/usr/include/${header}`;
const onPath = (tool) => (process.env.PATH ?? '').split(delimiter).some((dir) => dir && existsSync(join(dir, tool)));

const needed = [
  [onPath('g++'), 'g++', 'g++'],
  [onPath('make'), 'make', 'make'],
  [onPath('python3'), 'python3 (for node-gyp)', 'python3'],
  [existsSync('/usr/include/liburing.h'), '/usr/include/liburing.h', 'liburing-dev'],
  [existsSync('/usr/include/libaio.h'), '/usr/include/libaio.h', 'libaio-dev'],
  [existsSync(multiarch('sys/sdt.h')), 'sys/sdt.h', 'systemtap-sdt-dev'],
];
const missing = needed.filter(([present]) => !present);
if (missing.length > 0) {
  const what = missing.map(([, name]) => name).join(', ');
  const pkgs = missing.map(([, , pkg]) => pkg).join(' ');
  console.error(`iolab: cannot build the addon (no prebuilt one fits this system): ${what} missing; install with: apt-get install ${pkgs}`);
  process.exit(1);
}
