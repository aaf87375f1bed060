// The traced command line, checked before bpftrace starts (attaching takes seconds): parsed by
// the iolab program itself, built for that line as `iolab` would build it, stopped just before
// the command's action would run. A usage error (unknown command, unknown option, a bad number)
// is then the command's own one `iolab:` line, at once, and nothing is traced.
import type { Command } from 'commander';

/** The iolab program for a command line (src/program.ts's buildProgram, handed to the trace
 * command when it is registered). */
export type ProgramFor = (args: readonly string[]) => Promise<Command>;

/** Thrown by the preAction hook: the line parsed, and no action ran. */
const parsedWell = Symbol('parsed');

/**
 * Resolves when `args` parse as an iolab command line; otherwise rejects with the
 * CommanderError whose message commander has already printed (its exit code is the command's).
 */
export async function checkCommandLine(programFor: ProgramFor, args: string[]): Promise<void> {
  // the program loads only the commands a line names (src/program.ts): a program of its own
  // for the traced line, not the one running trace
  const program = await programFor(args);
  // A parent's preAction hook runs before any subcommand's action.
  program.hook('preAction', () => {
    throw parsedWell;
  });
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (err) {
    if (err !== parsedWell) throw err;
  }
}
