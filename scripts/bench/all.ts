// npm run bench:all — the standard set with short runs, then one report: bench iops (4 KiB
// randread, O_DIRECT, an iodepth sweep, fio beside iolab when fio is installed), bench echo,
// bench ipc, bench api. Writes bench-results/all-*.json, bench-results/report.html and, where
// Debian's Chromium is installed, its picture bench-results/report.png (docs/report.png is one).
// Short by design (minutes, not the figures for docs): BENCH_RUNTIME (s per run), BENCH_FILE,
// BENCH_SIZE and BENCH_DEPTHS override the defaults.
import { execa } from 'execa';
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../../src/native.js';
import { iolabArgv } from '../../src/spawn-iolab.js';
import { chromiumPath, launchChromium } from '../../test/support/browser.js';

const runtime = process.env.BENCH_RUNTIME ?? '1';
const size = process.env.BENCH_SIZE ?? '256m';
const depths = process.env.BENCH_DEPTHS ?? '1,4,16';
const ownFile = process.env.BENCH_FILE === undefined;
const file = process.env.BENCH_FILE ?? join(tmpdir(), `iolab-bench-all-${process.pid}.dat`);
// Relative to where npm runs the script (the checkout), so the report shows short paths.
const results = relative(process.cwd(), join(projectRoot, 'bench-results')) || '.';

/** Runs `iolab ...args` with its output shown; false when it failed. */
async function iolab(args: string[]): Promise<boolean> {
  process.stderr.write(`\n$ iolab ${args.join(' ')}\n`);
  const r = await execa(...iolabArgv(args), { reject: false, stdio: 'inherit' });
  if (r.exitCode !== 0) process.stderr.write(`bench:all: iolab ${args.join(' ')} failed (exit ${r.exitCode})\n`);
  return r.exitCode === 0;
}

const hasFio = (await execa('fio', ['--version'], { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;
mkdirSync(results, { recursive: true });
const written: string[] = [];
const failed: string[] = [];

async function step(name: string, output: string, args: string[]): Promise<void> {
  const path = join(results, output);
  // the results of the last bench:all are replaced (every --output keeps an existing file unless --force)
  if (await iolab([...args, '--output', path, '--force'])) written.push(path);
  else failed.push(name);
}

try {
  await step('bench iops', 'all-iops.json', ['bench', 'iops', '--filename', file, '--size', size, '--rw', 'randread',
    '--bs', '4k', '--direct=1', '--ioengine', 'io_uring,libaio,psync,posixaio', '--sweep', `iodepth=${depths}`,
    '--runtime', runtime, '--time_based', ...(hasFio ? ['--vs-fio', '--repeat', '1'] : [])]);
} finally {
  if (ownFile) rmSync(file, { force: true });
}
await step('bench echo', 'all-echo.json', ['bench', 'echo', '--clients', '10,100', '--duration', String(Math.max(1, Number(runtime))),
  '--rounds', '1', '--generators', 'epoll']);
await step('bench ipc', 'all-ipc.json', ['bench', 'ipc', '--sizes', '64,4k,64k,1m', '--mode', 'throughput',
  '--duration', '200ms', '--rounds', '1']);
await step('bench api', 'all-api.json', ['bench', 'api', '--rounds', '1', '--duration', '200ms']);

const report = join(results, 'report.html');
if (written.length > 0 && await iolab(['report', ...written, '-o', report, '--force'])) {
  process.stdout.write(`\nbench:all: ${report} (open it in a browser; it needs no network)\n`);
  if (chromiumPath) {
    const { browser, close } = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.setViewportSize({ width: 1000, height: 800 });
      await page.goto(pathToFileURL(report).href);
      await page.screenshot({ path: join(results, 'report.png'), fullPage: true });
      process.stdout.write(`bench:all: ${join(results, 'report.png')} (its picture, from Chromium)\n`);
    } finally {
      await close();
    }
  }
}
if (failed.length > 0) {
  process.stderr.write(`bench:all: failed: ${failed.join(', ')}\n`);
  process.exitCode = 1;
}
