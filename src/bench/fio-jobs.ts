// The jobs of a `bench iops` run as fio 3.33 forms them from its command line and job file: the
// command line's options before the first --name are the defaults of every job, each --name is
// a job, then the job file: its [global] sections change the defaults for the sections after
// them, each job section starts from those defaults. Each job with numjobs=N is N jobs (fio's
// clones, 0..N-1), each with its own file NAME.N.0 when no filename is given. groupid counts
// stonewall and new_group as fio does (a job that has either starts a new group after a group
// with jobs); a stonewall job also waits for every job before it.
import { statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { Command } from 'commander';
import { UserError } from '../cli-util.js';
import { atFioDefault, isFlag, isZeroOne, jobOption, refuseFioOption, isFioOption, findLong } from './fio-cli.js';
import type { FioCommandLine } from './fio-cli.js';
import type { FioOptionText, FioSectionText } from './fio-jobfile.js';
import { FIO_ALIASES, FIO_INVERSES, splitFilenames, stripJobFileLine, substituteValue } from './fio-values.js';
import { engineInfo, engineOptionOwners } from './engines.js';
import { parseWholeNumber } from '../numbers.js';

/** One fio job: a section of the job file or a --name of the command line, one clone of it. */
export interface FioJob {
  /** fio's jobname: the name option when the section sets one, else the section's name. */
  name: string;
  /** The section's name, which names the job's file when it has none (SECTION.CLONE.0). */
  section: string;
  /** fio's subjob number: 0 for the job itself, 1..numjobs-1 for its clones. */
  clone: number;
  /** The job's options, keyed as commander keys them, values parsed. */
  options: Record<string, unknown>;
  /** The files the job's filename names (fio's ':' list), or its default file. */
  filenames: string[];
  groupid: number;
  /** Waits for every job before it (fio's stonewall): the jobs before it form one run. */
  stonewall: boolean;
}

export interface FioJobList {
  jobs: FioJob[];
  /** fio's "global options": what the command line before any --name and the [global]
   * sections set, fio's option names, the values as written (after ${VAR} and $ncpus...). */
  globalOptions: Record<string, string>;
  /** The run is a fio job (a job file, or a command line with --name): fio's defaults hold
   * where iolab's plain command line has its own (ioengine). */
  fioJob: boolean;
}

type Values = Record<string, unknown>;

/** Where a job's values keep the fio options given at fio's default (FIO_DEFAULT_ONLY): shown in
 * its job options, nothing else. */
export const DEFAULT_KEY = 'fio_defaults';

/** An option text's value, parsed by the command's own option; fio's inverse options turned
 * around. Returns [commander key, value] (value undefined: the flag is off). */
function parseOptionText(cmd: Command, text: FioOptionText, fromFile: boolean): [string, unknown] {
  const where = fromFile ? `${text.where}: ` : '';
  const spelled = fromFile ? `'${text.name}'` : text.where;
  const option = jobOption(cmd, text.name);
  if (!option && !findLong(cmd, text.name) && atFioDefault(text.name, fromFile && text.value !== undefined ? substituteValue(text.name, text.value) : text.value)) {
    return [DEFAULT_KEY, { [FIO_ALIASES[text.name] ?? text.name]: text.value ?? '1' }];
  }
  if (!option) {
    if (findLong(cmd, text.name)) throw new UserError(`${where}'${text.name}' is an iolab command-line option, not a job option`);
    if (isFioOption(text.name)) refuseFioOption(text.name, spelled, where);
    throw new UserError(`${where}unknown option '${text.name}'`);
  }
  const key = option.attributeName();
  const label = fromFile ? text.name : text.where;
  let value = text.value;
  if (value !== undefined && fromFile) value = substituteValue(text.name, value);
  const inverse = FIO_INVERSES[text.name];
  if (inverse && value !== undefined) value = inverse.value(value);
  if (isFlag(option)) {
    if (value === undefined || value === '1') return [key, true];
    if (value === '0') return [key, undefined];
    throw new UserError(`${where}${label}: expected 0 or 1, got '${text.value}'`);
  }
  if (value === undefined) {
    if (!option.optional) throw new UserError(`${where}${label} needs a value (${text.name}=...)`);
    if (!isZeroOne(option)) return [key, option.presetArg ?? true];  // --verify alone
    value = inverse ? inverse.value('1') : '1';
  }
  if (key === 'ioengine' && fromFile) checkJobFileEngine(where, value);
  if (key === 'rw' && value.includes(':')) value = value.slice(0, value.indexOf(':'));  // the modifier: rwModifier
  if (key === 'filename') {
    // fio refuses an empty name, and so an unset ${VAR} that was the whole name: never ./NAME.0.0
    if (value.trim() === '') {
      const unset = /\$\{[^}]+\}/.test(text.value ?? '') ? ` (${text.value} is not set)` : '';
      throw new UserError(`${where}${fromFile ? `filename=${text.value ?? ''}` : label} names no file${unset}; ` +
        `fio refuses it too ("failed parsing filename=${text.value ?? ''}")`);
    }
    return [key, value];
  }
  try {
    return [key, option.parseArg ? option.parseArg(value, undefined) : value];
  } catch (err) {
    if (fromFile) throw new UserError(`${where}${label}: ${(err as Error).message}`);
    // on the command line, commander's words for a value its option refuses, as every command has them
    if ((err as { code?: string }).code === 'commander.invalidArgument') {
      throw new UserError(`option '${option.flags}' argument '${value}' is invalid. ${(err as Error).message}`);
    }
    throw err;
  }
}

/** A job's file under its directory= (fio's: a relative name goes under it; one folder, where
 * fio's ':' list of folders spreads a job's files over them, which iolab does not). */
function inDirectory(directory: unknown, file: string): string {
  if (typeof directory !== 'string' || directory === '' || isAbsolute(file)) return file;
  const dirs = splitFilenames(directory);
  if (dirs.length > 1) {
    throw new UserError(`directory=${directory} names ${dirs.length} folders (fio's ':' list): iolab puts a job's files in one folder`);
  }
  if (!statSync(dirs[0], { throwIfNoEntry: false })?.isDirectory()) {
    throw new UserError(`directory=${directory}: no such folder (fio refuses it too: "${dirs[0]} is not a directory")`);
  }
  return join(dirs[0], file);
}

/** fio's wait_for=NAME: the job starts once the job NAME (all its copies) ended. iolab runs jobs in
 * steps between waits, so it runs a wait_for that is such a step: every job since the last wait
 * is NAME's (fio's waitfor example); a wait for one job while others run on is refused by name.
 * A wait starts no new group (new_group or stonewall do, as in fio). */
function waitsFor(target: unknown, since: string[], job: string): boolean {
  if (typeof target !== 'string' || target === '') return false;
  if (!since.includes(target)) {
    throw new UserError(`${job}: wait_for=${target}: no job '${target}' before it runs at the same time (fio waits only for a job before it)`);
  }
  if (since.some((n) => n !== target)) {
    throw new UserError(`${job}: wait_for=${target}: ${since.filter((n) => n !== target).join(', ')} run at the same time as ${target} ` +
      'and would go on; iolab runs jobs in steps between waits, so only a wait for every job since the last one runs (stonewall=1 waits for all)');
  }
  return true;
}

/** A job file names one engine as fio names it: fio has no engine lists, no 'all' and no
 * posix_aio (it fails "engine ... not loadable"); those are iolab's own --ioengine spellings. */
function checkJobFileEngine(where: string, value: string): void {
  const name = value.trim();
  const engine = engineInfo(name);
  if (engine?.name === name) return;
  const why = name === 'all' ? '\'all\' is iolab\'s own --ioengine list' :
    name.includes(',') ? 'an engine list is iolab\'s own --ioengine, a job file\'s job runs one engine' :
      engine ? `fio names this engine ${engine.name}` : 'no such engine';
  throw new UserError(`${where}ioengine=${name}: ${why} (fio: "engine ${name} not loadable")` +
    (engine && !name.includes(',') && name !== 'all' ? `; write ioengine=${engine.name}` : ''));
}

/** In a fio job an engine's option is known only once its ioengine= was read, as in fio
 * (`--sqthread_poll --ioengine=io_uring` is "unrecognized option '--sqthread_poll'"). */
function checkEngineOptionOrder(values: Values, text: FioOptionText, fromFile: boolean): void {
  const owners = engineOptionOwners(FIO_ALIASES[text.name] ?? text.name);
  if (!owners) return;
  const engines = (values.ioengine as string[] | undefined) ?? ['psync'];
  if (engines.some((e) => owners.includes(e))) return;
  throw new UserError(`${fromFile ? `${text.where}: '${text.name}'` : text.where}: an option of ${owners.join(', ')}, ` +
    `given before its ioengine= (fio reads an engine's options only after ioengine=${owners[0]}, ` +
    `and refuses this as "unrecognized option '${text.name}'")`);
}

/** The canonical fio name and text of an option as fio's JSON lists it ("global options"). */
function dumped(text: FioOptionText, fromFile: boolean): [string, string] | undefined {
  if (text.value === undefined) return undefined;
  const name = FIO_ALIASES[text.name] ?? text.name;
  return [name, fromFile ? substituteValue(text.name, text.value) : text.value];
}

/** fio's offset modifier of a sequential rw (read:-8k, write:112k): bytes added to each next
 * offset beyond the block; undefined without one. Random or mixed jobs' modifiers (fio's
 * rw_sequencer counts for random offsets) are refused by name. */
function rwModifier(text: FioOptionText, fromFile: boolean): number | undefined {
  const value = fromFile && text.value !== undefined ? substituteValue(text.name, text.value) : text.value;
  const colon = value?.indexOf(':') ?? -1;
  if (value === undefined || colon < 0) return undefined;
  const mode = value.slice(0, colon).trim();
  const spelled = `${fromFile ? `${text.where}: ` : ''}${text.name}=${value}`;
  if (mode !== 'read' && mode !== 'write') {
    throw new UserError(`${spelled}: iolab runs an offset modifier on a read or write job (fio's ':N' on ${mode} counts random offsets)`);
  }
  const m = /^(-?)(.+)$/.exec(value.slice(colon + 1).trim());
  try {
    const bytes = parseWholeNumber(m?.[2] ?? '', { min: 0, size: true });
    return m?.[1] === '-' ? -bytes : bytes;
  } catch (err) {
    throw new UserError(`${spelled}: the offset modifier ${(err as Error).message}`);
  }
}

function applyAll(cmd: Command, into: Values, section: FioSectionText, fromFile: boolean, fioJob: boolean): void {
  for (const text of section.options) {
    if (fioJob) checkEngineOptionOrder(into, text, fromFile);
    const [key, value] = parseOptionText(cmd, text, fromFile);
    if (key === DEFAULT_KEY) {
      into[DEFAULT_KEY] = { ...(into[DEFAULT_KEY] as Record<string, string> | undefined), ...(value as Record<string, string>) };
      continue;
    }
    if (key === 'rw') into.rw_offset_add = rwModifier(text, fromFile);
    if (value === undefined) delete into[key];
    else into[key] = value;
  }
}

/**
 * The jobs of the command line (its globals and --name jobs) and of the job file's sections, in
 * fio's order and with fio's precedence; numjobs made into clones; groupids counted.
 */
export function fioJobList(cmd: Command, commandLine: FioCommandLine, fileSections: FioSectionText[] | undefined): FioJobList {
  const defaults: Values = {};
  const globalOptions: Record<string, string> = {};
  const dump = (section: FioSectionText, fromFile: boolean) => {
    for (const text of section.options) {
      const d = dumped(text, fromFile);
      if (d) globalOptions[d[0]] = d[1];
    }
  };
  const fioJob = fileSections !== undefined || commandLine.jobs.length > 0;
  applyAll(cmd, defaults, commandLine.global, false, fioJob);
  dump(commandLine.global, false);
  const sections: { section: FioSectionText; values: Values }[] = [];
  for (const job of commandLine.jobs) {
    const values = { ...defaults };
    applyAll(cmd, values, job, false, fioJob);
    sections.push({ section: job, values });
  }
  let file = 0;
  let wall = false;
  for (const s of fileSections ?? []) {
    // each job file after the first starts from fio's defaults, not from the command line's or
    // the files' before it (fio's fill_def_thread), and its first job behind a stonewall
    if ((s.file ?? 0) !== file) {
      file = s.file ?? 0;
      for (const key of Object.keys(defaults)) if (key !== 'force') delete defaults[key];
      for (const key of Object.keys(globalOptions)) delete globalOptions[key];
      wall = true;
    }
    if (s.global) {
      applyAll(cmd, defaults, s, true, fioJob);
      dump(s, true);
      continue;
    }
    const values: Values = { ...defaults, name: undefined, ...(wall ? { stonewall: true } : {}) };
    wall = false;
    applyAll(cmd, values, s, true, fioJob);
    sections.push({ section: s, values });
  }
  if (!fioJob) sections.push({ section: { name: '', global: false, options: [], where: 'the command line' }, values: defaults });
  const jobs: FioJob[] = [];
  let groupid = 0;
  let jobsInGroup = 0;
  let sinceWall: string[] = [];  // the jobs since the last wait, by name
  for (const { section, values } of sections) {
    const waits = waitsFor(values.wait_for, sinceWall, section.name);
    const stonewall = values.stonewall === true;
    if ((stonewall || values.new_group === true) && jobsInGroup > 0) {
      groupid++;
      jobsInGroup = 0;
    }
    const numjobs = (values.numjobs as number | undefined) ?? 1;
    const given = typeof values.filename === 'string' ? splitFilenames(stripJobFileLine(values.filename)) : [];
    const name = typeof values.name === 'string' && values.name !== '' ? values.name : section.name;
    // fio makes a job's copies last first (its add_job: subjob numjobs-1 down to 1), so they are
    // numbered, logged (N) and given their offset_increment in that order
    for (const clone of [0, ...Array.from({ length: numjobs - 1 }, (_, i) => numjobs - 1 - i)]) {
      // fio's clones share a named file; without one each has its own, named after the section
      const own = given.length > 0 ? given : section.name !== '' ? [`${section.name}.${clone}.0`] : [];
      const filenames = own.map((f) => inDirectory(values.directory, f));
      jobs.push({ name, section: section.name, clone, options: values, filenames, groupid,
        stonewall: (stonewall || waits) && clone === 0 });
      jobsInGroup++;
    }
    if (stonewall || waits) sinceWall = [];
    sinceWall.push(section.name);
  }
  return { jobs, globalOptions, fioJob };
}
