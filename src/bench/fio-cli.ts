// fio's command line for `bench iops`: fio takes `-opt=value` as well as `--opt=value`, and its
// boolean options bare (`-thread`) or with 0/1 (`-time_based=1`). This turns such an argv into
// the spelling commander parses, and refuses fio's options that iolab doesn't run by name, so a
// fio user's own command line either runs as written or says which option is the reason.
import { Command, type Option } from 'commander';
import { UserError } from '../cli-util.js';
import { FIO_OPTION_NAMES } from './fio-names.js';

/** fio options that change the system rather than the job: named apart in the refusal. */
const systemSettings: Record<string, string> = {
  ioscheduler: 'it switches the device\'s I/O scheduler, a system setting',
};

/** The one line that refuses a fio option iolab doesn't run (`-ioscheduler=noop`). */
export function refuseFioOption(name: string, spelled: string, where = ''): never {
  const why = systemSettings[name];
  throw new UserError(`${where}${spelled}: ${why ? `${why}; ` : ''}a fio option iolab doesn't run` +
    (why ? ' (set it yourself before the job if you want it)' : ''));
}

export function isFioOption(name: string): boolean {
  return FIO_OPTION_NAMES.has(name);
}

/** An option of cmd by a long name (without dashes): commander keeps the first of two long
 * spellings (--iodepth_batch_submit, --iodepth_batch) as `short`. */
export function findLong(cmd: Command, name: string): Option | undefined {
  return cmd.options.find((o) => o.long === `--${name}` || o.short === `--${name}`);
}

/** Options a fio user writes bare or as 0/1 whose commander form takes no value (--time_based). */
export const isFlag = (o: Option) => !o.required && !o.optional;
/** Options that take fio's 0|1 as an optional value (--direct [0|1]). */
export const isZeroOne = (o: Option) => o.optional && /\[0\|1\]/.test(o.flags);

/** argv as fio spells it -> argv as commander parses it. Short options of iolab (-m, -h) and
 * everything after `--` pass through untouched. */
export function fioArgv(cmd: Command, argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    // -ioengine=libaio, -thread: one dash before a long name is fio's spelling of two
    const m = /^--?([A-Za-z][\w-]+)(?:=([\s\S]*))?$/.exec(arg);
    if (!m) {
      out.push(arg);
      continue;
    }
    const [, name, value] = m;
    const option = findLong(cmd, name);
    if (!option) {
      if (isFioOption(name)) refuseFioOption(name, arg.split('=')[0]);
      // -mrRD is iolab's short -m with its value; any other unknown word is refused by commander
      const short = !arg.startsWith('--') && cmd.options.some((o) => o.short === `-${name[0]}`);
      out.push(arg.startsWith('--') || short ? arg : `-${arg}`);
      continue;
    }
    if (isFlag(option)) {
      // fio's booleans: -time_based, -time_based=1; =0 is the default, so it leaves the flag off
      if (value === undefined || value === '1') out.push(`--${name}`);
      else if (value !== '0') throw new UserError(`--${name}: expected 0 or 1, got '${value}'`);
    } else {
      out.push(value === undefined ? `--${name}` : `--${name}=${value}`);
    }
  }
  return out;
}

/** A commander Command whose options may be spelled as fio spells them. */
export class FioStyleCommand extends Command {
  override parseOptions(argv: string[]) {
    return super.parseOptions(fioArgv(this, argv));
  }
}
