// `iolab bench ipc`: messages between two processes over each transport, against memcpy in
// the same run. And its hidden `peer` subcommand, the receiving process it starts.
import { Command, Option } from 'commander';
import { commandLine, emitResults, oneLineErrors, UserError } from '../cli-util.js';
import { markInterrupted } from '../interrupt.js';
import { machineInfo } from '../bench/machine.js';
import { native } from '../native.js';
import { durationOption, numberListOption, numberOption, parseWholeNumber } from '../numbers.js';
import { resultsOption } from '../path-options.js';
import { defaultSizes, parseModes, parseTransports, planRun, type IpcOptions } from './plan.js';
import { servePeer } from './peer.js';
import { buildResults, formatResults } from './results.js';
import { runPlan, stderrProgress } from './run.js';
import { transportNames } from './transports.js';

interface CommandOptions {
  transports: string;
  sizes: number[];
  mode: string;
  duration: number;
  rounds: number;
  check: string;
  json?: boolean;
  output?: string;
}

/** IOLAB_IPC_FAULT=<n>: the sender changes one byte of message n of every cell; =stale:<n>: it
 * sends message n with message n-1's stamps. The receiver must catch both (the tests' proof
 * that a transport delivering wrong bytes fails the run). */
function faultKnob(): Pick<IpcOptions, 'faultMessage' | 'faultStale'> {
  const value = process.env.IOLAB_IPC_FAULT ?? '';
  if (value === '') return {};
  const stale = value.startsWith('stale:');
  return { faultMessage: parseWholeNumber(stale ? value.slice(6) : value, { min: stale ? 1 : 0 }), faultStale: stale };
}

async function runCommand(opts: CommandOptions): Promise<void> {
  if (opts.check !== 'sampled' && opts.check !== 'full') throw new UserError(`--check: expected sampled or full, got '${opts.check}'`);
  const options: IpcOptions = {
    transports: parseTransports(opts.transports),
    sizes: [...new Set(opts.sizes)].sort((a, b) => a - b),
    modes: parseModes(opts.mode),
    durationMs: opts.duration,
    rounds: opts.rounds,
    checkFull: opts.check === 'full',
    ...faultKnob(),
  };
  const plan = planRun(options);
  const run = await runPlan(plan, stderrProgress(options.rounds));
  const results = buildResults(plan, run);
  const json = { ...results, machine: machineInfo(), command: commandLine(), date: new Date().toISOString() };
  emitResults(opts, json, formatResults(results));
  if (run.interruptedBy) markInterrupted();
}

function peerCommand(): Command {
  return new Command('peer')
    .description('the receiving process of bench ipc (started by bench ipc itself)')
    .requiredOption('--control-fd <fd>', 'the control socket bench ipc passed', numberOption({ min: 0 }))
    .action(async (opts: { controlFd: number }) => servePeer(opts.controlFd));
}

export function ipcCommand(): Command {
  const names = transportNames.join(',');
  const cmd = new Command('ipc')
    .description('messages between two processes over each transport (sockets, pipe, a shared-memory queue, an fd per message, io_uring) against memcpy, same run: bytes/s, round-trip percentiles, ratios')
    .usage('[options]')
    .addOption(new Option('--transports <list>', `transports, comma-separated: ${names}`).default(names, 'all'))
    .option('--sizes <list>', 'message sizes (bytes; k, m, g suffixes)', numberListOption({ min: native.ipcMinMessage, size: true }), defaultSizes)
    .option('--mode <mode>', 'throughput (one way, as fast as it goes), pingpong (round trips) or both', 'both')
    .addOption(new Option('--duration <time>', 'time per cell (500ms, 2s; a bare number is seconds)').argParser(durationOption({ wholeMs: true })).default(500, '500ms'))
    .option('--rounds <n>', 'rounds; the order of transports alternates, figures are medians', numberOption({ min: 1 }), 3)
    .option('--check <how>', 'what the receiver compares: sampled (every page\'s stamp and one full page per message) or full (every byte)', 'sampled')
    .option('--json', 'print the results as one JSON object instead of the table')
    .addOption(resultsOption('also write the results as JSON to this file (npm run bench:ipc: bench-results/ipc.json)'))
    .option('--force', 'replace an existing --output file (or a symlink itself, never its target)')
    .addHelpText('after', `
Each cell runs for --duration with a fresh transport: the sender (this process) and the receiver
(a second iolab process) run their loops in C, off the JS thread. The receiver checks every
message: a transport that delivers wrong bytes fails the run. docs/ipc.md has the method.`)
    .action(runCommand);
  cmd.addCommand(peerCommand(), { hidden: true });
  return oneLineErrors(cmd);
}
