// Runs the Ring's model-based property in a child process (run.ts) and reads what it printed:
// the failures with fast-check's reports, a crash with the seed of the run it happened in, and
// what the generators reached. With keepGoing, a crash does not end the search: the next child
// starts at the seed after it.
import { execa } from 'execa';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { latestGen } from './version.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');

export interface ModelFailure {
  seed: number;
  /** The generators' version it ran with. */
  gen: number;
  /** The run's number in the search (seeds are consecutive from the first). */
  run: number;
  report: string;
}

export interface ModelRun {
  runs: number;
  failures: ModelFailure[];
  coverage: Record<string, number>;
}

export interface ModelOptions {
  seed: number;
  /** The generators' version (commands.ts latestGen when left out). */
  gen?: number;
  runs: number;
  dir: string;
  path?: string;
  replay?: string;
  keepGoing?: boolean;
  timeoutMs: number;
  /** How long fast-check may shrink a failure (0: not at all). */
  shrinkMs?: number;
}

/** The environment variables that replay one failure, as a command line prefix. */
export function replayCommand(f: ModelFailure): string {
  const path = /path: "([^"]+)"/.exec(f.report)?.[1];
  const replay = /replayPath="([^"]*)"/.exec(f.report)?.[1];
  const exact = path === undefined ? '' : ` (the shrunk case at once: IOLAB_FUZZ_GEN=${f.gen} IOLAB_FUZZ_SEED=${f.seed} IOLAB_FUZZ_PATH='${path}' IOLAB_FUZZ_REPLAY='${replay ?? ''}')`;
  return `IOLAB_FUZZ_GEN=${f.gen} IOLAB_FUZZ_SEED=${f.seed} IOLAB_FUZZ_RUNS=1 npx vitest run test/ring-model.test.ts${exact}`;
}

export async function runModel(options: ModelOptions): Promise<ModelRun> {
  const total: ModelRun = { runs: 0, failures: [], coverage: {} };
  let seed = options.seed;
  const gen = options.gen ?? latestGen;
  let left = options.runs;
  const deadline = Date.now() + options.timeoutMs;
  while (left > 0) {
    const child = await execa(process.execPath, ['--expose-gc', '--import', 'tsx', join(root, 'test/support/ring-model/run.ts')], {
      cwd: root,
      reject: false,
      timeout: Math.max(1000, deadline - Date.now()),
      env: {
        IOLAB_FUZZ_SEED: String(seed),
        IOLAB_FUZZ_GEN: String(gen),
        IOLAB_FUZZ_RUNS: String(left),
        IOLAB_FUZZ_PATH: options.path ?? '',
        IOLAB_FUZZ_REPLAY: options.replay ?? '',
        IOLAB_FUZZ_KEEP_GOING: options.keepGoing ? '1' : '0',
        IOLAB_MODEL_DIR: options.dir,
        IOLAB_FUZZ_SHRINK_MS: String(options.shrinkMs ?? 60_000),
        IOLAB_FUZZ_TRACE: left === 1 ? '1' : '0',
      },
    });
    let started: { run: number; seed: number } | undefined;
    let summary: { done: number; coverage: Record<string, number> } | undefined;
    let reached: Record<string, number> = {};
    const commands: string[] = [];
    for (const line of child.stdout.split('\n')) {
      if (!line.startsWith('{')) continue;
      const o = JSON.parse(line);
      if (o.seed !== undefined && o.run !== undefined) started = o;
      if (o.command !== undefined) commands.push(o.command);
      if (o.reached !== undefined) reached = o.reached;
      if (o.failure !== undefined) total.failures.push({ ...o.failure, gen, run: o.failure.run + (seed - options.seed) });
      if (o.done !== undefined) summary = o;
    }
    for (const [k, n] of Object.entries(summary?.coverage ?? reached)) total.coverage[k] = (total.coverage[k] ?? 0) + n;
    if (summary !== undefined) {
      total.runs += summary.done;
      break;
    }
    // it died in the middle of a run: that run's seed is the counterexample
    const how = child.timedOut ? 'timed out' : `died (${child.signal ?? `exit ${child.exitCode}`})`;
    const at = started ?? { run: 0, seed };
    const last = commands.length === 0 ? '' : `\nits last commands (a replay of it shows them):\n  ${commands.slice(-3).join('\n  ')}`;
    total.failures.push({ seed: at.seed, gen, run: at.seed - options.seed, report: `the process ${how} in this run${last}\n${child.stderr.slice(-3000)}` });
    total.runs += at.run;
    if (!options.keepGoing || child.timedOut || options.path !== undefined) break;
    left -= at.run + 1;
    seed = at.seed + 1;
  }
  return total;
}
