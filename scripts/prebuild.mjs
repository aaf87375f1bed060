// npm pack's prebuilt addon: builds the addon in build-prebuild/, leaving build/ alone (Node-API,
// so one binary serves every Node line; liburing, libaio, libstdc++ linked in, so it needs only
// glibc; without the storage engines only the tests use) and puts it where node-gyp-build looks
// for it: prebuilds/linux-x64/iolab.napi.glibc.node. Made at pack time, never committed.
// Refuses to make it anywhere but on x64 glibc Linux, the platform it is for.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { root, stagedBuild } from './staged-build.mjs';

const glibc = process.report?.getReport().header.glibcVersionRuntime;
if (process.platform !== 'linux' || process.arch !== 'x64' || !glibc) {
  console.error(`iolab: the prebuilt addon is made on x64 Linux with glibc; this is ${process.platform}-${process.arch}${glibc ? '' : ' without glibc'}`);
  process.exit(1);
}
const built = stagedBuild('build-prebuild', ['--release', '--test_engines=0'], 'building the prebuilt addon');
const dir = join(root, 'prebuilds', 'linux-x64');
rmSync(join(root, 'prebuilds'), { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const target = join(dir, 'iolab.napi.glibc.node');
copyFileSync(built, target);
// symbols out, the USDT notes (.note.stapsdt) kept: bpftrace still finds the probes
execFileSync('strip', ['--strip-unneeded', target]);
console.log(`prebuilt addon: ${target}`);
