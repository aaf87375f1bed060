// Options and arguments that take a path carry a mark, given where they are defined: whether
// iolab only reads the file or may write it (a declared output), and for the results of a run
// (--output, report -o) the rule those follow. The program checks every marked path before a
// command's action runs (src/run-files.ts), and the invariant test reads the marks from the
// program itself: a new path option is covered by both as soon as it is defined with its mark.
import { Argument, Option, type Command } from 'commander';

export interface PathMark {
  /** iolab may create or change the file at this path; false: it only reads it. */
  output: boolean;
  /** The results of a run (--output, report -o): written whole under a temp name and renamed;
   * an existing file or a symlink only with --force; `-` is stdout. createFolders: missing
   * folders are made. */
  results?: { createFolders: boolean };
  /** The flags that let the command change a file that exists already (default --force; none
   * for a path iolab binds a socket at, which never replaces a file). */
  changedBy?: readonly string[];
  /** An argument's name in a message, as a user calls it (`job file`, `input`); `<name>` is
   * the help's placeholder, not a word. */
  called?: string;
}

const marks = new WeakMap<Option | Argument, PathMark | 'not a path'>();

/** An option that takes a path, with its mark. */
export function pathOption(flags: string, description: string, mark: PathMark): Option {
  const option = new Option(flags, description);
  marks.set(option, mark);
  return option;
}

/** A command's argument that takes a path (or several: `<files...>`), with its mark. */
export function pathArgument(name: string, description: string, mark: PathMark): Argument {
  const argument = new Argument(name, description);
  marks.set(argument, mark);
  return argument;
}

/** `--output <file>`: where a run's results go, by the one rule every results file follows. */
export function resultsOption(description: string): Option {
  return pathOption('--output <file>', `${description} (- prints it instead of the table, as --json; ` +
    'an existing file only with --force)', { output: true, results: { createFolders: true } });
}

/** Declares that an option whose words mention files takes no path (`--size`: the file's size). */
export function notPath(option: Option): Option {
  marks.set(option, 'not a path');
  return option;
}

/** The mark of an option or argument; 'not a path' when declared so; undefined when unmarked. */
export function pathMarkOf(item: Option | Argument): PathMark | 'not a path' | undefined {
  return marks.get(item);
}

/** One path a parsed command was given: the option (or argument) as a user spells it, its mark. */
export interface GivenPath {
  option: string;
  path: string;
  mark: PathMark;
  /** The commander option, to change its value (`--output -` becomes --json). */
  key?: string;
}

/** A command whose parser takes some options out of commander's hands (bench iops: fio's job
 * options): the values given to one, undefined for a bare flag. */
export interface OptionsGivenElsewhere {
  givenElsewhere(option: Option): (string | undefined)[];
}

/** The paths a parsed command was given, in the order its options and arguments are defined. */
export function givenPaths(cmd: Command): GivenPath[] {
  const given: GivenPath[] = [];
  const values = cmd.opts();
  // a command that reads some options itself (bench iops: fio's job options) says what they were
  const alsoGiven = (cmd as Command & Partial<OptionsGivenElsewhere>).givenElsewhere;
  for (const option of cmd.options) {
    const mark = marks.get(option);
    if (mark === undefined || mark === 'not a path') continue;
    const value = values[option.attributeName()];
    const spelled = option.short ?? option.long ?? option.flags;
    if (typeof value === 'string') given.push({ option: spelled, path: value, mark, key: option.attributeName() });
    for (const path of alsoGiven?.call(cmd, option) ?? []) if (path !== undefined) given.push({ option: spelled, path, mark });
  }
  cmd.registeredArguments.forEach((argument, i) => {
    const mark = marks.get(argument);
    const value: unknown = cmd.processedArgs[i];
    if (mark === undefined || mark === 'not a path') return;
    for (const path of Array.isArray(value) ? value : [value]) {
      if (typeof path === 'string') given.push({ option: mark.called ?? argument.name(), path, mark });
    }
  });
  return given;
}
