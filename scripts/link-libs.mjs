// The libraries the addon links, for binding.gyp: liburing and libaio as static archives where
// the system has them (Debian's -dev packages ship liburing.a and libaio.a), so that the built
// addon, the prebuilt one in the package included, needs nothing but glibc at run time; the
// shared libraries elsewhere.
import { execFileSync } from 'node:child_process';
import { isAbsolute } from 'node:path';

/** The path of lib<name>.a on the compiler's search path, or undefined. */
function staticArchive(name) {
  try {
    const path = execFileSync('cc', [`-print-file-name=lib${name}.a`], { encoding: 'utf8' }).trim();
    return isAbsolute(path) ? path : undefined;
  } catch {
    return undefined;
  }
}

const libs = ['uring', 'aio'].map((name) => staticArchive(name) ?? `-l${name}`);
console.log([...libs, '-lrt', '-lpthread'].join('\n'));
