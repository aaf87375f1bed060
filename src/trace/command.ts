// `iolab trace [--json] -- <iolab command...>`: checks the command line, runs the command with
// its output passing through, then prints what bpftrace saw of its I/O (after the command's own
// output, on stdout; --json: one JSON line, stdout's only line, with the command's stdout sent
// to stderr so a JSON reader gets the JSON alone). The exit status is the command's.
import { Command } from 'commander';
import { oneLineErrors, printJson, UserError } from '../cli-util.js';
import { markInterrupted } from '../interrupt.js';
import { usdtProbes, usdtProvider } from './usdt.js';
import { runTraced } from './run.js';
import { checkCommandLine, type ProgramFor } from './check-command.js';
import { checkTracingPossible } from './preflight.js';
import { formatSummary, summaryJson } from './summary.js';

/** programFor: the iolab program for a command line (src/program.ts's buildProgram). */
export function traceCommand(programFor: ProgramFor): Command {
  return oneLineErrors(new Command('trace')
    .description('runs an iolab command under bpftrace: its io_uring requests per opcode (count, io-wq or inline, kernel latency), its read/write syscalls, and the Ring\'s USDT probes')
    .argument('<command...>', 'the iolab command to run, after --')
    .option('--json', 'print the trace as one JSON line: {"ops":[...],"syscalls":[...],"usdt":[...],"ringStages":[...]}')
    .addHelpText('after', `
Needs root (or CAP_BPF and CAP_PERFMON), tracefs (mounted at /sys/kernel/tracing when missing)
and bpftrace. Whether tracing can run here is checked first, then the command line: a usage
error is the command's own line and nothing is traced. The command's stdout and stderr pass
through and the trace follows on stdout; with --json, stdout holds the JSON line alone and the command's stdout goes to stderr.
The addon's USDT probes (provider ${usdtProvider}): ${usdtProbes.map((p) => p.name).join(', ')}.

Examples:
  iolab trace -- readv readv.c --io-uring
  iolab trace --json -- bench iops --filename /tmp/t.dat --ioengine io_uring --number_ios 3000`)
    .action(async (args: string[], opts: { json?: boolean }) => {
      if (args[0] === 'trace') throw new UserError('iolab trace cannot trace itself');
      // whether tracing can run here first (root, bpftrace, tracefs): it needs no module of the
      // traced command, which a process that dropped to another uid may not be able to load
      const bpftracePath = await checkTracingPossible();
      await checkCommandLine(programFor, args);
      const outcome = await runTraced(args, { stdoutToStderr: opts.json === true, bpftracePath });
      const head = { command: ['iolab', ...args], pid: outcome.pid, exitCode: outcome.exitCode, partial: outcome.partial };
      if (opts.json) {
        printJson({ ...head, ...(summaryJson(outcome.summary) as object) });
      } else {
        const status = outcome.partial ? 'interrupted: partial' : `exit ${outcome.exitCode}`;
        process.stdout.write(`\ntrace of iolab ${args.join(' ')} (pid ${outcome.pid}, ${status})\n`);
        process.stdout.write(formatSummary(outcome.summary));
      }
      if (outcome.partial) markInterrupted();
      else process.exitCode = outcome.exitCode;
    }));
}
