// Shared by every command: the error a user sees (one line, no stack), help that shows
// defaults as a user types them, and JSON output. Numbers are parsed in numbers.ts.
import { Help, type Command, type Option } from 'commander';
import { accessSync, constants, lstatSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from 'node:fs';
import { getSystemErrorMap } from 'node:util';
import { createHash } from 'node:crypto';
import { basename, dirname, join, resolve } from 'node:path';
import { formatSize, type NumberRule } from './numbers.js';

/** An error meant for the user: printed as one line, exit code 1 (or the given one). */
export class UserError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
    this.name = 'UserError';
  }
}

/** Prints one JSON value on its own line (the --json output of every command). */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + '\n');
}

/** A benchmark's report as its --json/--output flags ask: on stdout either the JSON or the table,
 * then the JSON written to --output ("written: FILE" after the table). Printed first, so a file
 * that cannot be written at the end (checkOutputPath ran before the run) loses no figures. */
export function emitReport(opts: { json?: boolean; output?: string }, json: unknown, table: string): void {
  if (opts.json) printJson(json);
  else process.stdout.write(table);
  if (!opts.output) return;
  writeJsonFile(opts.output, json, '--output');
  if (!opts.json) process.stdout.write(`written: ${opts.output}\n`);
}

/** "EACCES: permission denied": an errno error's code and text, without the paths Node adds. */
function errnoText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const text = e.errno !== undefined ? getSystemErrorMap().get(e.errno)?.[1] : undefined;
  return e.code && text ? `${e.code}: ${text}` : describeError(err);
}

/**
 * Checks, before any work, that a file the user named can be written where they named it, so a
 * long run is not thrown away at its end: not a folder nor a device or FIFO (a symlink is fine:
 * it is replaced, never written through), and its folder, or the nearest existing folder above it
 * when createFolder, one this process may write in. Every refusal is one UserError naming the
 * user's path after the option (`--output: cannot write 'x': it is a folder; name a file`).
 */
export function checkOutputPath(path: string, option: string, createFolder = true): void {
  const refuse = (why: string) => new UserError(`${option}: cannot write '${path}': ${why}`);
  let existing: Stats | undefined;
  try {
    existing = lstatSync(path);
  } catch (err) {
    // nothing there yet is fine (a file on the way is found below); ENAMETOOLONG, ELOOP are not
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw refuse(errnoText(err));
  }
  if (existing?.isDirectory()) throw refuse('it is a folder; name a file');
  if (existing && !existing.isFile() && !existing.isSymbolicLink()) throw refuse('it exists and is not a regular file');
  let folder = dirname(resolve(path));
  let found = statOrUndefined(folder);
  if (!found && !createFolder) throw refuse(`no folder '${folder}'`);
  while (!found) {
    folder = dirname(folder);
    found = statOrUndefined(folder);
  }
  if (!found.isDirectory()) throw refuse(`'${folder}' is not a folder`);
  try {
    accessSync(folder, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw refuse(`cannot write in '${folder}' (${errnoText(err)})`);
  }
}

/** stat, or undefined when it fails: checkOutputPath then walks up to what it can stat. */
function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** Writes data to path whole or not at all: under a temp name beside it, renamed into place
 * (so a symlink at path is replaced, never written through). A failure names path, as the user
 * gave it, not the temp name, and leaves no temp file. */
export function replaceFile(path: string, data: string, option?: string): void {
  // A name near the 255-byte limit would not fit with the temp name's dot and suffix.
  const name = basename(path);
  const stem = Buffer.byteLength(name) <= 200 ? name : `iolab-${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
  const temp = join(dirname(resolve(path)), `.${stem}.${process.pid}.tmp`);
  try {
    writeFileSync(temp, data, { flag: 'wx' });
    renameSync(temp, path);
  } catch (err) {
    rmSync(temp, { force: true });
    throw new UserError(`${option ? `${option}: ` : ''}could not write '${path}' (${errnoText(err)})`);
  }
}

/** Writes a benchmark's JSON to the file a user named with --output (replaceFile), creating
 * the folder. */
export function writeJsonFile(path: string, value: unknown, option = '--output'): void {
  try {
    mkdirSync(dirname(resolve(path)), { recursive: true });
  } catch (err) {
    throw new UserError(`${option}: could not write '${path}' (${errnoText(err)})`);
  }
  replaceFile(path, JSON.stringify(value, null, 2) + '\n', option);
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
 * subcommand to the same group (`benchGroup(program).addCommand(iopsCommand())`). The group
 * checks every benchmark's --output before its action runs (checkOutputPath): one check for
 * all of them, and none can start a long run whose results it cannot keep. */
export function benchGroup(program: Command): Command {
  const existing = program.commands.find((c) => c.name() === 'bench');
  if (existing) return existing;
  return program.command('bench').description('benchmarks: each runs its hot loop natively and prints a table or --json')
    .hook('preAction', (_group, bench) => {
      const output: unknown = bench.opts().output;
      if (typeof output === 'string') checkOutputPath(output, '--output');
    });
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
