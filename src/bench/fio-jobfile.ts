// fio job files for `iolab bench iops job.fio`: fio's INI format, [global] and job sections,
// `;` and `#` comment lines, `option` or `option=value` lines. Every option is checked by the same
// parser as on the command line; an unknown one is refused with the file, line and name, and a
// file that is not a job file (a data file given as the positional) is refused as one.
import type { Command } from 'commander';
import { UserError } from '../cli-util.js';
import { readInputFile } from '../input-file.js';
import { findLong, isFioOption, isFlag, isZeroOne, refuseFioOption } from './fio-cli.js';

export interface JobSection {
  /** The section's name: fio's job name. */
  name: string;
  /** Options as commander keys them (attribute names), values parsed. */
  options: Record<string, unknown>;
}

/** iolab's own command-line options that a job file can't carry: how a run prints, not the job. */
const commandLineOnly = new Set(['json', 'output', 'output-format', 'vs-fio', 'repeat', 'mode', 'sweep']);

/** fio's job-file-only options iolab accepts: the file's jobs already run one after another. */
export const JOB_ORDER_OPTIONS = ['stonewall', 'new_group', 'wait_for_previous'];

function parseValue(cmd: Command, key: string, value: string | undefined, where: string): [string, unknown] {
  const option = findLong(cmd, key);
  if (!option || commandLineOnly.has(key)) {
    if (option) throw new UserError(`${where}: '${key}' is an iolab command-line option, not a job option`);
    if (isFioOption(key)) refuseFioOption(key, `'${key}'`, `${where}: `);
    throw new UserError(`${where}: unknown option '${key}'`);
  }
  const attr = option.attributeName();
  if (isFlag(option)) {
    if (value === undefined || value === '1') return [attr, true];
    if (value === '0') return [attr, undefined];
    throw new UserError(`${where}: ${key}: expected 0 or 1, got '${value}'`);
  }
  const text = value ?? (isZeroOne(option) ? '1' : undefined);
  if (text === undefined) throw new UserError(`${where}: ${key} needs a value (${key}=...)`);
  try {
    return [attr, option.parseArg ? option.parseArg(text, undefined) : text];
  } catch (err) {
    throw new UserError(`${where}: ${key}: ${(err as Error).message}`);
  }
}

/** The job sections of a fio job file, [global] options folded into the jobs that follow it. */
export function readJobFile(path: string, cmd: Command): JobSection[] {
  const text = readInputFile(path, 'a fio job file');
  const notJobFile = (why: string) => new UserError(`'${path}' is not a fio job file (${why}); ` +
    'the file to benchmark is --filename, and testIOPS mode takes it with -m=rRD|sRD|rWR|sWR');
  if (text.includes(0)) throw notJobFile('it holds binary data');
  const jobs: JobSection[] = [];
  let global: Record<string, unknown> = {};
  let current: Record<string, unknown> | undefined;
  const lines = text.toString('utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    const where = `${path}:${i + 1}`;
    if (line === '' || line.startsWith(';') || line.startsWith('#')) continue;
    const section = /^\[([^\]]+)\]$/.exec(line);
    if (section) {
      if (section[1] === 'global') {
        current = global = { ...global };
      } else {
        current = { ...global, name: section[1] };
        jobs.push({ name: section[1], options: current });
      }
      continue;
    }
    const option = /^([A-Za-z_][\w-]*)\s*(?:=\s*(.*))?$/.exec(line);
    if (!option) throw notJobFile(`line ${i + 1} is neither a [section] nor an option`);
    if (current === undefined) throw notJobFile(`line ${i + 1} holds an option before any [section]`);
    if (JOB_ORDER_OPTIONS.includes(option[1])) continue;
    const [attr, value] = parseValue(cmd, option[1], option[2]?.trim(), where);
    current[attr] = value;
  }
  if (jobs.length === 0) throw notJobFile('it has no job section');
  return jobs;
}
