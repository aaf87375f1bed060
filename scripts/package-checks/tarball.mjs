// What the tarball holds: the compiled CLI, the public types and the prebuilt addon, nothing a
// user does not need (no engine only the tests use, in the addon or as a source), and an addon
// that needs only glibc and keeps its USDT probes.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export async function checkTarball({ work, tarball, files, run, check }) {
  check('the tarball holds the compiled CLI, the public types and the prebuilt addon',
    ['dist/cli.js', 'dist/index.js', 'dist/index.d.ts', 'prebuilds/linux-x64/iolab.napi.glibc.node', 'binding.gyp'].every((f) => files.includes(f)));
  const unwanted = files.filter((f) => /^(test|bench|build|build-asan|src|node_modules|\.ci)\//.test(f) || f.endsWith('.ts') && !f.endsWith('.d.ts') || (f.startsWith('prebuilds/') && !f.startsWith('prebuilds/linux-x64/')) || (f.startsWith('docs/') && !f.endsWith('.md')));
  check("the tarball holds nothing a user does not need (tests, sources, other builds, the docs' picture)", unwanted.length === 0, unwanted.join(', '));
  check('the tarball holds the LICENSE and the docs', files.includes('LICENSE') && files.includes('docs/api.md'));
  const addonDir = join(work, 'addon');
  mkdirSync(addonDir);
  execFileSync('tar', ['xzf', tarball, '-C', addonDir, 'package/prebuilds/linux-x64/iolab.napi.glibc.node']);
  const addon = join(addonDir, 'package/prebuilds/linux-x64/iolab.napi.glibc.node');
  const needed = run('readelf', ['-d', addon]).out
    .split('\n').filter((l) => l.includes('(NEEDED)')).map((l) => /\[(.+)\]/.exec(l)?.[1]);
  check('the prebuilt addon needs only glibc (liburing, libaio, libstdc++ linked in)', needed.every((lib) => /^(libc|libm|ld-linux-x86-64)\.so/.test(lib)), needed.join(' '));
  const notes = run('readelf', ['-n', addon]).out;
  check('the prebuilt addon keeps its USDT probes', /stapsdt/.test(notes));
  // each engine's name is a string in the addon (its table and its options' help)
  const binary = readFileSync(addon);
  const testEngines = ['test_delay', 'test_nodata'].filter((name) => binary.includes(name));
  check('the prebuilt addon has no engine only the tests use', testEngines.length === 0, testEngines.join(', '));
  const testSources = files.filter((f) => /^native\/bench\/engine_test_/.test(f));
  check('the tarball has no source of an engine only the tests use', testSources.length === 0, testSources.join(', '));
}
