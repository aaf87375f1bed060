// npm run bench:startup — how long the installed `iolab` command takes to start, beside a bare
// `node -e 0` in the same run: `iolab --version` and `iolab readv readv.c` from the compiled
// package JS (dist/, built here first as npm pack builds it), and the checkout's tsx launcher
// for scale. Contenders alternate within each round; medians of wall time, CPU per run (the
// children's user+sys, from /proc/self/stat) and the ratio to `node -e 0`. Prints a table and
// writes bench-results/startup.json. BENCH_ROUNDS overrides the 30 rounds.
import { spawnSync, execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/native.js';
import { median, table } from '../../src/format.js';
import { procStatFields } from '../../src/procfs.js';
import { machineInfo } from '../../src/bench/machine.js';
import { writeJsonFile } from '../../src/cli-util.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? '30');
const node = process.execPath;
const cli = join(projectRoot, 'dist', 'cli.js');
const contenders: { name: string; args: string[] }[] = [
  { name: 'node -e 0', args: ['-e', '0'] },
  { name: 'iolab --version', args: [cli, '--version'] },
  { name: 'iolab readv readv.c', args: [cli, 'readv', 'readv.c'] },
  { name: 'checkout (tsx): iolab --version', args: [join(projectRoot, 'scripts', 'iolab-ts.mjs'), '--version'] },
];

/** CPU seconds of this process's waited-for children so far (cutime + cstime). */
function childCpuSeconds(): number {
  const f = procStatFields(process.pid);
  if (!f) throw new Error('cannot read /proc/self/stat');
  return (Number(f[13]) + Number(f[14])) / 100; // cutime and cstime (proc(5) fields 16, 17), in ticks
}

execFileSync(process.execPath, [join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(projectRoot, 'tsconfig.build.json')], { stdio: 'inherit' });
const wall = new Map(contenders.map((c) => [c.name, [] as number[]]));
const cpu = new Map(contenders.map((c) => [c.name, 0]));
for (const c of contenders) spawnSync(node, c.args, { cwd: projectRoot }); // warm the page cache
for (let round = 0; round < rounds; round++) {
  for (const c of contenders) {
    const cpuBefore = childCpuSeconds();
    const start = process.hrtime.bigint();
    const r = spawnSync(node, c.args, { cwd: projectRoot, stdio: 'ignore' });
    const ns = Number(process.hrtime.bigint() - start);
    if (r.status !== 0) throw new Error(`${c.name} exited with ${r.status}`);
    wall.get(c.name)!.push(ns / 1e6);
    cpu.set(c.name, cpu.get(c.name)! + childCpuSeconds() - cpuBefore);
  }
}
const base = median(wall.get('node -e 0')!);
const results = contenders.map((c) => {
  const ms = median(wall.get(c.name)!);
  return { name: c.name, medianMs: ms, cpuMsPerRun: (cpu.get(c.name)! * 1000) / rounds, ratioToNode: ms / base };
});
process.stdout.write(table(['command', 'wall (median)', 'CPU per run', 'x node -e 0'],
  results.map((r) => [r.name, `${r.medianMs.toFixed(1)} ms`, `${r.cpuMsPerRun.toFixed(1)} ms`, `${r.ratioToNode.toFixed(2)}x`])));
process.stdout.write(`${rounds} alternated rounds; goal: the compiled iolab within 2x of node -e 0\n`);
mkdirSync(join(projectRoot, 'bench-results'), { recursive: true });
writeJsonFile(join(projectRoot, 'bench-results', 'startup.json'), { machine: machineInfo(), node: process.version, rounds, results });
