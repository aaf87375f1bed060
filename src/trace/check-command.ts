// The traced command line, checked before bpftrace starts (attaching takes seconds): parsed by
// the very program the trace command belongs to, stopped just before the command's action
// would run. A usage error (unknown command, unknown option, a bad number) is then the
// command's own one `iolab:` line, at once, and nothing is traced.
import type { Command } from 'commander';

/** Thrown by the preAction hook: the line parsed, and no action ran. */
const parsedWell = Symbol('parsed');

let checking = false;
const hooked = new WeakSet<Command>();

/**
 * Resolves when `args` parse as an iolab command line; otherwise rejects with the
 * CommanderError whose message commander has already printed (its exit code is the command's).
 */
export async function checkCommandLine(traceCommand: Command, args: string[]): Promise<void> {
  let program = traceCommand;
  while (program.parent) program = program.parent;
  if (!hooked.has(program)) {
    hooked.add(program);
    // A parent's preAction hook runs before any subcommand's action.
    program.hook('preAction', () => {
      if (checking) throw parsedWell;
    });
  }
  checking = true;
  try {
    // commander 14 restores each command's option values before a second parse.
    await program.parseAsync(args, { from: 'user' });
  } catch (err) {
    if (err !== parsedWell) throw err;
  } finally {
    checking = false;
  }
}
