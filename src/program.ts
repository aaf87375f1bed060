// The iolab program: registers the commands, parses, prints errors. No logic lives here.
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchGroup, describeError, oneLineErrors, UserError } from './cli-util.js';
import { readvCommand } from './demos/readv.js';
import { writevCommand } from './demos/writev.js';
import { fdpassCommand } from './demos/fdpass.js';
import { shmCommand } from './demos/shm.js';
import { echoCommand } from './echo/command.js';
import { tourCommand } from './demos/tour.js';
import { genCommand } from './bench/gen.js';
import { apiCommand } from './bench/api.js';
import { iopsCommand } from './bench/iops.js';
import { latencyCommand } from './bench/latency.js';
import { benchEchoCommand } from './bench/echo.js';
import { ipcCommand } from './ipc/command.js';
import { traceCommand } from './trace/command.js';
import { reportCommand } from './report/command.js';

// Read when the module loads, not per command: a command may run after the process dropped to
// a uid that cannot read the checkout (the tests' other-user runs do).
const packageVersion: string = (JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'package.json'), 'utf8')) as { version: string }).version;

export function buildProgram(): Command {
  const program = new Command('iolab')
    .description('Shows, tests and measures Linux I/O primitives: readv/writev, fd passing, shared memory, io_uring')
    .version(packageVersion, '-V, --version', 'print the version of iolab');

  program.addCommand(readvCommand());
  program.addCommand(writevCommand());
  program.addCommand(fdpassCommand());
  program.addCommand(shmCommand());
  program.addCommand(echoCommand());
  program.addCommand(tourCommand());
  program.addCommand(genCommand());
  benchGroup(program).addCommand(apiCommand());
  benchGroup(program).addCommand(iopsCommand());
  benchGroup(program).addCommand(latencyCommand());
  benchGroup(program).addCommand(benchEchoCommand());
  benchGroup(program).addCommand(ipcCommand());
  program.addCommand(traceCommand());
  program.addCommand(reportCommand());
  // Usage errors of every command, however deep, read like all other errors: one `iolab:` line.
  oneLineErrors(program);
  return program;
}

/** Runs iolab with argv (process.argv's shape); errors become one `iolab:` line and an exit code. */
export async function runIolab(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander already printed its message (or the help text).
      process.exitCode = err.exitCode;
    } else {
      process.stderr.write(`iolab: ${describeError(err)}\n`);
      if (process.env.IOLAB_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
      process.exitCode = err instanceof UserError ? err.exitCode : 1;
    }
  }
}
