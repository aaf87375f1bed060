#!/usr/bin/env node
// The iolab program: registers the commands, parses, prints errors. No logic lives here.
import { Command, CommanderError } from 'commander';
import { benchGroup, describeError, UserError } from './cli-util.js';

const program = new Command('iolab')
  .description('Shows, tests and measures Linux I/O primitives: readv/writev, fd passing, shared memory, io_uring')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

// ---- commands: one addCommand per demo / benchmark module ----
import { readvCommand } from './demos/readv.js';
import { writevCommand } from './demos/writev.js';
import { fdpassCommand } from './demos/fdpass.js';
import { shmCommand } from './demos/shm.js';
import { tourCommand } from './demos/tour.js';
program.addCommand(readvCommand());
program.addCommand(writevCommand());
program.addCommand(fdpassCommand());
program.addCommand(shmCommand());
program.addCommand(tourCommand());
import { apiCommand } from './bench/api.js';
benchGroup(program).addCommand(apiCommand());
import { echoCommand } from './demos/echo.js';
program.addCommand(echoCommand());
import { benchEchoCommand } from './bench/echo.js';
benchGroup(program).addCommand(benchEchoCommand());

try {
  await program.parseAsync(process.argv);
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
