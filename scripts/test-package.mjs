// The package test (npm run test:package; .ci/run runs it): what a user gets from npm. Packs
// the tarball (prepack compiles the JS and types and builds the prebuilt addon), then on each
// supported Node line installs it into an empty project twice (--omit=dev, and --omit=dev
// --ignore-scripts: the prebuilt addon must load with no install step) and runs the checks of
// every scripts/package-checks/*.mjs there, in file-name order. A check module exports either or
// both of:
//
//   checkTarball({ root, work, tarball, files, run, check })   once, on the packed tarball
//   checks({ root, tarball, files, line, version, installFlags, project, node, env, run, iolab,
//            installProject, check })                         once per installed project
//
//   root          the checkout
//   work          a temp folder for the whole run (removed at its end)
//   tarball       the packed .tgz; files: the paths it holds ('dist/cli.js', ...)
//   line          the Node line (20, 22, ...); version: its `node --version` ('v22.23.5')
//   installFlags  ['--omit=dev'] or ['--omit=dev', '--ignore-scripts']: a slow check that needs
//                 one install per line can return early on the second
//   project       the empty project the tarball is installed in (node_modules/iolab)
//   node          that line's `node` (a path); env: the environment with its folder first on PATH
//   run(file, args, options?)   spawnSync in project with env unless options say otherwise; never
//                 throws; gives { status, out (stdout + stderr), stdout, stderr }
//   iolab(args, timeout?)       run of `npx --no-install iolab ...args` in project
//   installProject(name)        another empty project, <project>-<name>, with the tarball installed
//                 the same way, for a check that must not share one (it measures the install, or
//                 adds packages): { dir, install } (install: run's result)
//   check(name, ok, detail?)    records one result; in checks() the name gets the line and
//                 install mode in front
//
//   node scripts/test-package.mjs [--node 20,22,24,26] [--checks cli,library]
//
// Node lines other than this machine's: scripts/node-lines.mjs.
import { readdirSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { nodeBin, supportedLines } from './node-lines.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const argValue = (flag) => {
  const i = process.argv.indexOf(flag);
  return i > 0 ? process.argv[i + 1].split(',') : undefined;
};
const lines = argValue('--node')?.map(Number) ?? supportedLines;
const only = argValue('--checks');

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
  const stdout = r.stdout ?? '';
  const stderr = `${r.stderr ?? ''}${r.error ? `${r.error.message}\n` : ''}`;
  return { status: r.status, out: `${stdout}${stderr}`, stdout, stderr };
}

/** One module's checks; a throw is one failed check naming the module, and the rest still run. */
async function runChecks(module, checks, context) {
  try {
    await checks(context);
  } catch (err) {
    context.check(`${module.name} ran to its end`, false, err instanceof Error ? err.stack ?? err.message : String(err));
  }
}

const checksDir = join(root, 'scripts', 'package-checks');
const modules = [];
for (const name of readdirSync(checksDir).filter((f) => f.endsWith('.mjs')).sort()) {
  if (only && !only.includes(basename(name, '.mjs'))) continue;
  modules.push({ name, ...(await import(pathToFileURL(join(checksDir, name)).href)) });
}

const work = mkdtempSync(join(tmpdir(), 'iolab-package-'));
try {
  const pack = run('npm', ['pack', '--json', '--pack-destination', work], { cwd: root });
  if (pack.status !== 0) throw new Error(`npm pack failed:\n${pack.out}`);
  // prepack's build output comes first on stdout; the JSON is the last thing, from a line's start
  const packed = JSON.parse(pack.stdout.slice(pack.stdout.search(/^\[/m), pack.stdout.lastIndexOf(']') + 1))[0];
  const tarball = join(work, packed.filename);
  const files = packed.files.map((f) => f.path);
  console.log(`tarball: ${packed.filename}, ${(packed.size / 1024).toFixed(0)} KiB packed, ${(packed.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${files.length} files`);
  for (const m of modules) {
    if (m.checkTarball) await runChecks(m, m.checkTarball, { root, work, tarball, files, run, check });
  }

  for (const line of lines) {
    const bin = nodeBin(line);
    const node = join(bin, 'node');
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
    const version = run(node, ['--version']).out.trim();
    for (const installFlags of [['--omit=dev'], ['--omit=dev', '--ignore-scripts']]) {
      const label = `Node ${version}, npm install ${installFlags.join(' ')}`;
      /** An empty project at dir (a package.json only) with the tarball installed into it. */
      const installInto = (dir) => {
        mkdirSync(dir);
        writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
        return run('npm', ['install', '--no-audit', '--no-fund', ...installFlags, tarball], { cwd: dir, env });
      };
      const project = join(work, `node${line}${installFlags.length}`);
      const install = installInto(project);
      check(`${label}: installs`, install.status === 0, install.out);
      if (install.status !== 0) continue;
      const runHere = (file, args, options = {}) => run(file, args, { cwd: project, env, ...options });
      const context = {
        root, tarball, files, line, version, installFlags, project, node, env, run: runHere,
        iolab: (args, timeout) => runHere('npx', ['--no-install', 'iolab', ...args], { timeout }),
        installProject: (name) => ({ dir: `${project}-${name}`, install: installInto(`${project}-${name}`) }),
        check: (name, ok, detail) => check(`${label}: ${name}`, ok, detail),
      };
      for (const m of modules) {
        if (m.checks) await runChecks(m, m.checks, context);
      }
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
