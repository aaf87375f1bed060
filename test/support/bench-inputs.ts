// Real benchmark JSON for the report tests: each benchmark run for real with short options
// (and fio's own JSON when fio is installed), never hand-written figures.
import { execa } from 'execa';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './cli.js';

export interface BenchInputs {
  /** Name -> path of each JSON that could be made here. */
  files: Record<string, string>;
  /** Why an input is missing (e.g. no fio). */
  missing: Record<string, string>;
}

async function json(args: string[], path: string): Promise<void> {
  const r = await runCli([...args, '--json'], { timeout: 120_000 });
  if (r.exitCode !== 0) throw new Error(`iolab ${args.join(' ')} failed (${r.exitCode}): ${String(r.stderr)}`);
  const lines = String(r.stdout).trimEnd().split('\n');
  writeFileSync(path, lines[lines.length - 1] + '\n');
}

async function helpMentions(args: string[], text: string): Promise<boolean> {
  const r = await runCli([...args, '--help']);
  return r.exitCode === 0 && String(r.stdout).includes(text);
}

export async function makeBenchInputs(dir: string): Promise<BenchInputs> {
  const files: Record<string, string> = {};
  const missing: Record<string, string> = {};
  const data = join(dir, 'bench.dat');
  const sweep = await helpMentions(['bench', 'iops'], '--sweep') ? ['--sweep', 'iodepth=1,4'] : ['--iodepth', '4'];
  const iops = ['bench', 'iops', '--filename', data, '--size', '8m', '--rw', 'randread', '--runtime', '300ms'];
  files.iops = join(dir, 'iops.json');
  await json([...iops, '--ioengine', 'io_uring,psync', ...sweep], files.iops);
  const fio = await execa('fio', ['--version'], { reject: false }).catch(() => undefined);
  if (fio?.exitCode === 0) {
    files.vsFio = join(dir, 'vs-fio.json');
    await json([...iops, '--ioengine', 'io_uring', ...sweep, '--vs-fio', '--repeat', '1'], files.vsFio);
    files.fio = join(dir, 'fio.json');
    const job = (name: string, depth: number) => [`--name=${name}`, `--filename=${data}`, '--size=8m', '--rw=randread', '--bs=4k',
      '--ioengine=libaio', `--iodepth=${depth}`, '--runtime=300ms', '--time_based'];
    const r = await execa('fio', ['--output-format=json', `--output=${files.fio}`, ...job('qd1', 1), ...job('qd8', 8)], { reject: false });
    if (r.exitCode !== 0 || !existsSync(files.fio)) throw new Error(`fio failed: ${r.stderr}`);
  } else {
    missing.vsFio = missing.fio = 'fio is not installed';
  }
  const dict = join(dir, 'dict.txt');
  const gen = await runCli(['gen', dict, '--size', '64k']);
  if (gen.exitCode !== 0) throw new Error(`iolab gen failed: ${String(gen.stderr)}`);
  files.latency = join(dir, 'latency.json');
  await json(['bench', 'latency', '--engine', 'sync,io_uring', '--count', '16', '--no-direct', '--infile', dict,
    '--outfile', join(dir, 'latency.dat')], files.latency);
  files.echo = join(dir, 'echo.json');
  await json(['bench', 'echo', '--clients', '2,8', '--duration', '1', '--rounds', '1', '--servers', 'epoll,io_uring',
    '--generators', 'epoll'], files.echo);
  files.api = join(dir, 'api.json');
  await json(['bench', 'api', '--rounds', '1', '--duration', '50ms', '--size', '4m'], files.api);
  // the ping-pong group alone, as npm run bench:pingpong runs it: round trips only
  files.pingpong = join(dir, 'pingpong.json');
  await json(['bench', 'api', '--groups', 'pingpong', '--rounds', '1', '--round-trips', '200'], files.pingpong);
  if ((await execa('wrk', ['-v'], { reject: false })).exitCode !== undefined) { // undefined: no wrk to start
    // every server there is here (fastify's where it is installed), two connection counts, two depths
    files.http = join(dir, 'http.json');
    await json(['bench', 'http', '--connections', '1,8', '--in-flight', '1,4', '--duration', '1', '--rounds', '1'], files.http);
  } else {
    missing.http = 'wrk is not installed';
  }
  if (await helpMentions(['bench', 'ipc'], 'Usage: iolab bench ipc')) {
    files.ipc = join(dir, 'ipc.json');
    await json(['bench', 'ipc', '--sizes', '64,64k', '--mode', 'throughput', '--duration', '100ms', '--rounds', '1'], files.ipc);
  } else {
    missing.ipc = 'bench ipc is not in this checkout';
  }
  return { files, missing };
}
