// The package test (npm run test:package; .ci/run runs it): what a user gets from npm. Packs
// the tarball (prepack compiles the JS and types and builds the prebuilt addon), checks what it
// holds, then on each supported Node line installs it into an empty project twice (--omit=dev,
// and --ignore-scripts: the prebuilt addon must load with no install step) and runs there:
// `iolab --version`, `iolab tour`, a one-second `iolab bench iops`, README's library example as
// a plain .mjs, a program that reads with ring.readv and passes an fd with sendmsg/recvmsg, and
// a .ts typechecked by tsc against the installed types.
//
//   node scripts/test-package.mjs [--node 20,22,24,26]
//
// Node lines other than this machine's: scripts/node-lines.mjs.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeBin, supportedLines } from './node-lines.mjs';
import { channelChecks } from './package-checks/channel.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lineArg = process.argv.indexOf('--node');
const lines = lineArg > 0 ? process.argv[lineArg + 1].split(',').map(Number) : supportedLines;

let passed = 0;
let failed = 0;
const failures = [];
function check(name, ok, detail = '') {
  if (ok) passed++;
  else {
    failed++;
    failures.push(`${name}${detail ? `: ${detail}` : ''}`);
  }
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${!ok && detail ? `\n     ${detail.split('\n').slice(-6).join('\n     ')}` : ''}`);
}

/** Runs a command; its status and output (never throws). */
function run(file, args, options = {}) {
  const r = spawnSync(file, args, { encoding: 'utf8', timeout: 300_000, ...options });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, stdout: r.stdout ?? '' };
}

const work = mkdtempSync(join(tmpdir(), 'iolab-package-'));
try {
  // ---- the tarball ----
  const pack = run('npm', ['pack', '--json', '--pack-destination', work], { cwd: root });
  if (pack.status !== 0) throw new Error(`npm pack failed:\n${pack.out}`);
  const packed = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['), pack.stdout.lastIndexOf(']') + 1))[0];
  const tarball = join(work, packed.filename);
  const files = packed.files.map((f) => f.path);
  console.log(`tarball: ${packed.filename}, ${(packed.size / 1024).toFixed(0)} KiB packed, ${(packed.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${files.length} files`);
  check('the tarball holds the compiled CLI, the public types and the prebuilt addon',
    ['dist/cli.js', 'dist/index.js', 'dist/index.d.ts', 'prebuilds/linux-x64/iolab.napi.glibc.node', 'binding.gyp'].every((f) => files.includes(f)));
  const unwanted = files.filter((f) => /^(test|bench|docs|build|build-asan|src|node_modules|\.ci)\//.test(f) || f.endsWith('.ts') && !f.endsWith('.d.ts') || (f.startsWith('prebuilds/') && !f.startsWith('prebuilds/linux-x64/')));
  check('the tarball holds nothing a user does not need (tests, sources, other builds)', unwanted.length === 0, unwanted.join(', '));
  const addon = join(work, 'addon');
  mkdirSync(addon);
  execFileSync('tar', ['xzf', tarball, '-C', addon, 'package/prebuilds/linux-x64/iolab.napi.glibc.node']);
  const needed = run('readelf', ['-d', join(addon, 'package/prebuilds/linux-x64/iolab.napi.glibc.node')]).out
    .split('\n').filter((l) => l.includes('(NEEDED)')).map((l) => /\[(.+)\]/.exec(l)?.[1]);
  check('the prebuilt addon needs only glibc (liburing, libaio, libstdc++ linked in)', needed.every((lib) => /^(libc|libm|ld-linux-x86-64)\.so/.test(lib)), needed.join(' '));
  const notes = run('readelf', ['-n', join(addon, 'package/prebuilds/linux-x64/iolab.napi.glibc.node')]).out;
  check('the prebuilt addon keeps its USDT probes', /stapsdt/.test(notes));

  // ---- what a user runs, per Node line and install mode ----
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const example = /```js\n([\s\S]*?from 'iolab'[\s\S]*?)```/.exec(readme)?.[1];
  check("README has a library example importing from 'iolab'", example !== undefined);
  const consumerMjs = `
import { Ring, RingClosedError, readv, writev, sendmsg, recvmsg, socketpair, close, memfdCreate, constants } from 'iolab';
import { openSync, closeSync, readFileSync } from 'node:fs';
const fd = openSync('readv.c', 'r');
const ring = new Ring({ entries: 8 });
const buf = new Uint8Array(64);
const n = await ring.readv(fd, [buf], 0);
if (n !== 64 || Buffer.from(buf).toString() !== readFileSync('readv.c', 'utf8').slice(0, 64)) throw new Error('ring.readv read ' + n);
const [a, b] = socketpair('seqpacket');
sendmsg(a, [Buffer.from('fd')], { fds: [fd] });
const got = recvmsg(b, [Buffer.alloc(8)], { maxFds: 1 });
if (got.bytes !== 2 || got.fds.length !== 1) throw new Error('recvmsg: ' + JSON.stringify(got));
const again = new Uint8Array(8);
if (readv(got.fds[0], [again], 0) !== 8) throw new Error('the passed fd does not read');
for (const f of [got.fds[0], a, b]) close(f);
closeSync(fd);
await ring.close();
let closedError = false;
try { ring.nop(); } catch (err) { closedError = err instanceof RingClosedError; }
if (!closedError) throw new Error('a closed Ring did not throw RingClosedError');
if (typeof writev !== 'function' || typeof memfdCreate !== 'function' || constants.SCM_MAX_FD !== 253) throw new Error('exports');
console.log('consumer ok');
`;
  const consumerTs = `
import { Ring, readv, recvmsg, socketpair, type RecvResult, type RingFeatures } from 'iolab';
const ring: Ring = new Ring({ entries: 8 });
const features: RingFeatures = ring.features;
const bytes: Promise<number> = ring.readv(0, [new Uint8Array(4)], 0);
const [a]: [number, number] = socketpair('stream');
const r: RecvResult = recvmsg(a, [new Uint8Array(1)], { maxFds: 1 });
// @ts-expect-error readv takes a list of buffers, not one
readv(0, new Uint8Array(4));
export { features, bytes, r };
`;
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  for (const line of lines) {
    const bin = nodeBin(line);
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
    const version = run(join(bin, 'node'), ['--version']).out.trim();
    for (const mode of [['--omit=dev'], ['--omit=dev', '--ignore-scripts']]) {
      const label = `Node ${version}, npm install ${mode.join(' ')}`;
      const project = join(work, `node${line}${mode.length}`);
      mkdirSync(project);
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
      const install = run('npm', ['install', '--no-audit', '--no-fund', ...mode, tarball], { cwd: project, env });
      check(`${label}: installs`, install.status === 0, install.out);
      if (install.status !== 0) continue;
      const iolab = (args, timeout) => run('npx', ['--no-install', 'iolab', ...args], { cwd: project, env, timeout });
      const v = iolab(['--version']);
      check(`${label}: npx iolab --version`, v.status === 0 && v.out.trim() === JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version, v.out);
      const tour = iolab(['tour'], 120_000);
      check(`${label}: npx iolab tour`, tour.status === 0 && /tour done: .* temp folder removed/.test(tour.out), tour.out);
      const bench = iolab(['bench', 'iops', '--filename', join(project, 'job.dat'), '--size', '8m', '--ioengine', 'io_uring', '--runtime', '1', '--time_based'], 60_000);
      check(`${label}: a one-second npx iolab bench iops`, bench.status === 0 && /io_uring\s+[\d,]+/.test(bench.out), bench.out);
      copyFileSync(join(root, 'readv.c'), join(project, 'readv.c'));
      writeFileSync(join(project, 'readme-example.mjs'), example ?? '');
      const ex = run(join(bin, 'node'), ['readme-example.mjs'], { cwd: project, env });
      check(`${label}: README's library example runs as written`, ex.status === 0, ex.out);
      writeFileSync(join(project, 'consumer.mjs'), consumerMjs);
      const mjs = run(join(bin, 'node'), ['consumer.mjs'], { cwd: project, env });
      check(`${label}: a plain .mjs reads with ring.readv and passes an fd with sendmsg/recvmsg`, mjs.status === 0 && mjs.out.includes('consumer ok'), mjs.out);
      channelChecks({ project, node: join(bin, 'node'), env, run, check, label });
      writeFileSync(join(project, 'consumer.ts'), consumerTs);
      writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, types: [] }, files: ['consumer.ts'] }));
      const types = run(process.execPath, [tsc, '-p', project], { cwd: project });
      check(`${label}: a .ts typechecks against the installed types`, types.status === 0, types.out);
    }
  }
} catch (err) {
  check('the package test ran to its end', false, err instanceof Error ? err.message : String(err));
} finally {
  rmSync(work, { recursive: true, force: true });
}
if (failures.length > 0) console.log(`\nfailed:\n  ${failures.join('\n  ')}`);
console.log(`\npackage: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
