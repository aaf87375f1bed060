// Old spellings a user may still type. When a word was given one meaning (the glossary at the top
// of docs/architecture.md), some names on the command line changed; each old one keeps working and
// maps to the new one. One table per option; the commands read them through the helpers below.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { UserError } from './user-error.js';

/** Old value -> the name it has now. */
export type Aliases = Readonly<Record<string, string>>;

/** Echo servers: `iolab echo server --server`, bench echo's --servers. */
export const serverAliases: Aliases = { uring: 'io_uring' };
/** Load generators: `iolab echo bench --client`, bench echo's --generators. */
export const generatorAliases: Aliases = { uring: 'io_uring' };
/** bench ipc's --transports. */
export const transportAliases: Aliases = { 'uring-stream': 'io_uring-stream', 'shm-ring': 'shm-queue' };

/** The name `value` has now: itself, or what its old spelling maps to. */
export function currentName(aliases: Aliases, value: string): string {
  return Object.hasOwn(aliases, value) ? aliases[value] : value;
}

/** `value` (or its old spelling) as one of `known`; else "unknown server 'x' (known: a, b)". */
export function knownName<T extends string>(value: string, known: readonly T[], aliases: Aliases, what: string): T {
  const name = currentName(aliases, value);
  if (!(known as readonly string[]).includes(name)) throw new UserError(`unknown ${what} '${value}' (known: ${known.join(', ')})`);
  return name as T;
}

/** A comma-separated list of `known` names (old spellings mapped, each name once); not empty. */
export function knownNames<T extends string>(list: string, known: readonly T[], aliases: Aliases, what: string): T[] {
  const names = list.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (names.length === 0) throw new UserError(`expected a comma-separated list of ${what}s (known: ${known.join(', ')})`);
  return [...new Set(names.map((n) => knownName(n, known, aliases, what)))];
}

/** An option's parser that takes one of `known` (or an old spelling) and gives its current name. */
export function knownNameOption<T extends string>(known: readonly T[], aliases: Aliases, what: string): (value: string) => T {
  return (value) => {
    try {
      return knownName(value, known, aliases, what);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
  };
}

/**
 * Keeps `oldFlags` (e.g. '--engines <list>') working as the option `newLong` ('--servers') of `cmd`,
 * hidden in the help: commander has no second long name for one option. A value given under the
 * old name becomes the new option's before the action runs; both at once is one error line.
 */
export function optionAlias(cmd: Command, oldFlags: string, newLong: string): Command {
  const target = cmd.options.find((o) => o.long === newLong);
  if (!target) throw new Error(`optionAlias: ${cmd.name()} has no option ${newLong}`);
  const alias = new Option(oldFlags, `the old name of ${newLong}`).hideHelp();
  if (target.parseArg) alias.argParser(target.parseArg);
  cmd.addOption(alias);
  const oldKey = alias.attributeName();
  const newKey = target.attributeName();
  cmd.hook('preAction', (self) => {
    const value = self.getOptionValue(oldKey);
    if (value === undefined) return;
    if (self.getOptionValueSource(newKey) === 'cli') {
      throw new UserError(`${alias.long} is the old name of ${newLong}: give one of them`);
    }
    self.setOptionValueWithSource(newKey, value, 'cli');
    self.setOptionValueWithSource(oldKey, undefined, 'default');
  });
  return cmd;
}
