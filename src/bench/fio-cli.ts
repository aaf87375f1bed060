// fio's command line for `bench iops`: fio takes `-opt=value` as well as `--opt=value`, and its
// boolean options bare (`-thread`) or with 0/1 (`-time_based=1`). As in fio, the job options
// before the first `--name` are global (for every job, a job file's too) and each `--name`
// starts a job that takes the options after it. This splits such an argv: the job options go
// to fio-jobs.ts as written, iolab's own run options (--json, --vs-fio...) and the job file to
// commander. fio options iolab doesn't run are refused by name, so a fio user's own command
// line either runs as written or says which option is the reason.
import { Command, type Option } from 'commander';
import { UserError } from '../cli-util.js';
import { FIO_DEFAULT_ONLY, FIO_OPTION_NAMES } from './fio-names.js';
import { FIO_ALIASES, FIO_INVERSES, FIO_SPELLINGS, fioOptionName, splitFilenames } from './fio-values.js';
import type { FioOptionText, FioSectionText } from './fio-jobfile.js';

/** fio options that change the system rather than the job: named apart in the refusal. */
const systemSettings: Record<string, string> = {
  ioscheduler: 'it switches the device\'s I/O scheduler, a system setting',
};

/** iolab's options about how a run is done and shown, not about the job: never job options. */
export const RUN_OPTIONS: ReadonlySet<string> = new Set(['json', 'output', 'output-format', 'vs-fio', 'repeat', 'mode', 'sweep', 'help',
  'parse-only', 'showcmd', 'section', 'readonly', 'eta-newline', 'minimal']);

/** The one line that refuses a fio option iolab doesn't run (`-ioscheduler=noop`), or runs only
 * at fio's default (`do_verify=0`). */
export function refuseFioOption(name: string, spelled: string, where = ''): never {
  const why = systemSettings[name];
  const onlyAt = FIO_DEFAULT_ONLY[fioOptionName(name)];
  throw new UserError(`${where}${spelled}: ${why ? `${why}; ` : ''}a fio option iolab doesn't run` +
    (why ? ' (set it yourself before the job if you want it)' : onlyAt ? ` but at fio's default, ${fioOptionName(name)}=${onlyAt.shown}` : ''));
}

/** A fio option that iolab runs only at fio's default, given that default (bare: 1). */
export function atFioDefault(name: string, value: string | undefined): boolean {
  return FIO_DEFAULT_ONLY[fioOptionName(name)]?.accepts.test((value ?? '1').trim()) === true;
}

export function isFioOption(name: string): boolean {
  return FIO_OPTION_NAMES.has(name) || name in FIO_ALIASES;
}

/** An option of cmd by a long name (without dashes): commander keeps the first of two long
 * spellings (--iodepth_batch_submit, --iodepth_batch) as `short`. */
export function findLong(cmd: Command, name: string): Option | undefined {
  return cmd.options.find((o) => o.long === `--${name}` || o.short === `--${name}`);
}

/** The command's job option a name written in a job or on a command line means, through fio's
 * aliases and inverse options; undefined when it is no job option of iolab's. */
export function jobOption(cmd: Command, name: string): Option | undefined {
  const own = FIO_INVERSES[name]?.option ?? FIO_SPELLINGS[name] ?? name;
  const option = findLong(cmd, own) ?? findLong(cmd, FIO_ALIASES[own] ?? own);
  return option && !RUN_OPTIONS.has(option.long?.slice(2) ?? '') ? option : undefined;
}

/** Options a fio user writes bare or as 0/1 whose commander form takes no value (--time_based). */
export const isFlag = (o: Option) => !o.required && !o.optional;
/** Options that take fio's 0|1 as an optional value (--direct [0|1]). */
export const isZeroOne = (o: Option) => o.optional && /\[0\|1\]/.test(o.flags);

/** The job options of a command line as written, fio's way: globals (before the first --name)
 * and a job per --name. */
export interface FioCommandLine {
  global: FioSectionText;
  jobs: FioSectionText[];
}

/**
 * Splits argv (fio's spellings or commander's) into the job options, as fio reads them, and the
 * rest for commander: iolab's run options, the job file, short options (-m, -h) and everything
 * after `--`. A fio option iolab doesn't run is refused by name; an unknown word goes on to
 * commander, which refuses it.
 */
export function splitFioArgv(cmd: Command, argv: string[]): { commander: string[]; fio: FioCommandLine } {
  const global: FioSectionText = { name: 'global', global: true, options: [], where: 'the command line' };
  const fio: FioCommandLine = { global, jobs: [] };
  let section = global;
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    // -ioengine=libaio, -thread: one dash before a long name is fio's spelling of two
    const m = /^--?([A-Za-z][\w-]+)(?:=([\s\S]*))?$/.exec(arg);
    const option = m ? jobOption(cmd, m[1]) : undefined;
    if (m && !option && !findLong(cmd, m[1]) && FIO_DEFAULT_ONLY[fioOptionName(m[1])] !== undefined) {
      // fio's option at its default: a job option like the rest (its value in the next word too)
      let value = m[2];
      if (value === undefined && i + 1 < argv.length && !argv[i + 1].startsWith('-') && !atFioDefault(m[1], undefined)) value = argv[++i];
      if (!atFioDefault(m[1], value)) refuseFioOption(m[1], arg.split('=')[0]);
      section.options.push({ name: m[1], value, where: arg.split('=')[0] });
      continue;
    }
    if (!m || !option) {
      if (m && !findLong(cmd, m[1]) && isFioOption(m[1])) refuseFioOption(m[1], arg.split('=')[0]);
      // -mrRD is iolab's short -m with its value; a run option goes as typed
      const short = m && !arg.startsWith('--') && !findLong(cmd, m[1]) && cmd.options.some((o) => o.short === `-${m[1][0]}`);
      out.push(!m || arg.startsWith('--') || short ? arg : `-${arg}`);
      continue;
    }
    const [, name] = m;
    let value = m[2];
    const spelled = arg.split('=')[0];
    // a value in the next word, as commander takes it: always for an option that needs one, and
    // for one that may have one (--direct 1, --verify md5) unless the word is an option itself
    if (value === undefined && i + 1 < argv.length) {
      const next = argv[i + 1];
      if (option.required || (option.optional && !next.startsWith('-'))) {
        value = next;
        i++;
      }
    }
    if (name === 'name') {
      if (value === undefined || value === '') throw new UserError(`${spelled}: needs the job's name (${spelled}=NAME)`);
      section = { name: value, global: false, options: [], where: `${spelled}=${value}` };
      fio.jobs.push(section);
    }
    const text: FioOptionText = { name, value, where: spelled };
    section.options.push(text);
  }
  return { commander: out, fio };
}

/** A value as --showcmd writes it: description's in double quotes, as fio writes it; any other
 * value with a blank or a character a shell reads too (fio leaves those bare, and a shell would
 * split them), with `"`, `\`, `$` and `` ` `` escaped inside. */
function shownValue(name: string, value: string): string {
  if (name !== 'description' && !/[\s"'\\$`;&|<>()*?[\]#~!{}]/.test(value)) return value;
  return `"${value.replace(/["\\$`]/g, (c) => `\\${c}`)}"`;
}

/** fio's --showcmd: the job file and command line as one command line, the options before the
 * first --name every job's, then each job's --name and its options, as written (fio prints the
 * same with `fio` first). */
export function showCommand(commandLine: FioCommandLine, file: FioSectionText[] | undefined): string {
  const words = (s: FioSectionText) => s.options.map((o) => (o.value === undefined ? `--${o.name}` : `--${o.name}=${shownValue(o.name, o.value)}`));
  const out = ['iolab', 'bench', 'iops', ...words(commandLine.global)];
  for (const s of file ?? []) if (s.global) out.push(...words(s));
  for (const job of commandLine.jobs) out.push(...words(job));
  for (const s of file ?? []) if (!s.global) out.push(`--name=${shownValue('name', s.name)}`, ...words(s));
  return out.join(' ');
}

/** A commander Command whose job options are read as fio reads them (fioCommandLine). */
export class FioStyleCommand extends Command {
  fioCommandLine: FioCommandLine = { global: { name: 'global', global: true, options: [], where: 'the command line' }, jobs: [] };

  override parseOptions(argv: string[]) {
    const { commander, fio } = splitFioArgv(this, argv);
    this.fioCommandLine = fio;
    return super.parseOptions(commander);
  }

  /** The values a job option was given on the command line (each name of a filename list;
   * undefined for a bare flag), so that the program's check of a run's paths and of --force
   * sees them before the action (src/path-options.ts). */
  givenElsewhere(option: Option): (string | undefined)[] {
    const name = option.long?.replace(/^--/, '');
    const texts = [this.fioCommandLine.global, ...this.fioCommandLine.jobs].flatMap((s) => s.options);
    return texts.filter((t) => fioOptionName(t.name) === name)
      .flatMap((t) => (name === 'filename' && t.value !== undefined ? splitFilenames(t.value) : [t.value]));
  }
}
