// Shared by every command: the error a user sees (one line, no stack), help that shows
// defaults as a user types them, and JSON output. Numbers are parsed in numbers.ts.
import { Help, type Command, type Option } from 'commander';
import { formatSize, type NumberRule } from './numbers.js';
import { writeOutputFile } from './write-target.js';
import { showText } from './show-bytes.js';

export { UserError } from './user-error.js';

/** Prints one JSON value on its own line (the --json output of every command). */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

/** A benchmark's results as its --json/--output flags ask: on stdout either the JSON or the table,
 * then the JSON written to --output ("written: FILE" after the table). Printed first, so a file
 * that cannot be written at the end (checked before the run: src/run-files.ts) loses no figures. */
export function emitResults(opts: { json?: boolean; output?: string }, json: unknown, table: string): void {
  if (opts.json) printJson(json);
  else process.stdout.write(table);
  if (!opts.output) return;
  writeJsonFile(opts.output, json, '--output');
  if (!opts.json) process.stdout.write(`written: ${showText(opts.output)}\n`);
}

/** Writes a benchmark's JSON to the file a user named with --output (src/write-target.ts:
 * whole or not at all, as checked before the run; `-` is stdout). */
export function writeJsonFile(path: string, value: unknown, option = '--output'): void {
  writeOutputFile(path, JSON.stringify(value, null, 2) + '\n', option);
}

/**
 * Runs fn and returns what it printed on stdout (still printed): a report in fio's text format
 * for `--output-format=normal --output FILE`, which then goes to FILE as fio's does.
 */
export async function withStdoutCopy<T>(fn: () => Promise<T>): Promise<{ result: T; text: string }> {
  const chunks: string[] = [];
  const write = process.stdout.write;
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    return (write as (...args: unknown[]) => boolean).call(process.stdout, chunk, ...rest);
  }) as typeof process.stdout.write;
  try {
    const result = await fn();
    return { result, text: chunks.join('') };
  } finally {
    process.stdout.write = write;
  }
}

/** The command line a benchmark's JSON records, as the user typed it. */
export function commandLine(): string[] {
  return ['iolab', ...process.argv.slice(2)];
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
  }).configureHelp({ optionDescription });
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

/** A default as a user would type it: 32,64,128 for a list, 128M for a size, not JSON. */
export function showDefault(value: unknown, rule?: NumberRule): string {
  const one = (v: unknown) => (typeof v === 'number' && rule?.size ? formatSize(v) : String(v));
  return Array.isArray(value) ? value.map(one).join(',') : one(value);
}

const plainHelp = new Help();

/** commander's option description, with the default shown by showDefault. */
function optionDescription(option: Option): string {
  if (option.defaultValue === undefined || option.defaultValueDescription !== undefined || option.negate) {
    return plainHelp.optionDescription(option);
  }
  const rule = (option.parseArg as { rule?: NumberRule } | undefined)?.rule;
  const copy = Object.assign(Object.create(Object.getPrototypeOf(option)), option, {
    defaultValueDescription: showDefault(option.defaultValue, rule),
  }) as Option;
  return plainHelp.optionDescription(copy);
}
