// Shared by every command: the error a user sees (one line, no stack), option parsers that
// reject bad numbers with a clear message, and JSON/line output.
import { InvalidArgumentError, type Command } from 'commander';

/** An error meant for the user: printed as one line, exit code 1 (or the given one). */
export class UserError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = 'UserError';
  }
}

/** Parses a whole number >= min (commander argParser). Accepts 4k/1m/1g suffixes when sized. */
export function parseInteger(min: number, { sized = false } = {}) {
  return (value: string): number => {
    const n = sized ? parseSize(value) : Number(value);
    if (!Number.isSafeInteger(n) || n < min) {
      throw new InvalidArgumentError(`expected a whole number >= ${min}, got '${value}'`);
    }
    return n;
  };
}

const sizeUnits: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/** "4k" -> 4096, "128M" -> 134217728, "512" -> 512 (binary units, as fio reads them). */
export function parseSize(value: string): number {
  const m = /^(\d+)\s*([kmgt]?)(i?b)?$/i.exec(value.trim());
  if (!m) return NaN;
  return Number(m[1]) * sizeUnits[m[2].toLowerCase()];
}

/** Parses a comma list of whole numbers >= min ("32,64,128"). */
export function parseIntegerList(min: number) {
  const one = parseInteger(min);
  return (value: string): number[] => {
    const parts = value.split(',').map((s) => s.trim());
    if (value.trim() === '' || parts.some((p) => p === '')) {
      throw new InvalidArgumentError(`expected a comma-separated list of whole numbers >= ${min}, got '${value}'`);
    }
    return parts.map(one);
  };
}

/** Prints one JSON value on its own line (the --json output of every command). */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

/** The one line a user sees for an error: syscall errors read like Node's, others as is. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * Makes a command (and its subcommands) report usage errors like every other error: one line
 * `iolab: <message>` on stderr, and a thrown CommanderError (exitOverride) so cli.ts sets the
 * exit code. Commands built with `new Command()` and addCommand() do not inherit the program's
 * settings, so each command module applies this to what it returns.
 */
export function oneLineErrors(cmd: Command): Command {
  cmd.exitOverride().configureOutput({
    outputError: (str, write) => write(`iolab: ${str.replace(/^error: /, '')}`),
  });
  for (const sub of cmd.commands) oneLineErrors(sub);
  return cmd;
}

/** The `iolab bench` group: created on first use, so each benchmark module adds its own
 * subcommand to the same group (`benchGroup(program).addCommand(iopsCommand())`). */
export function benchGroup(program: Command): Command {
  const existing = program.commands.find((c) => c.name() === 'bench');
  if (existing) return existing;
  return program.command('bench').description('benchmarks: each runs its hot loop natively and prints a table or --json');
}
