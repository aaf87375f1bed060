// fio job files for `iolab bench iops job.fio`, read as fio 3.33 reads them: [global] sections
// (any section whose name starts with "global") and job sections, each line cut at its first
// ';' and then its first '#', `option` or `option=value` lines, `include FILE` (its lines as if
// written there). The text is read here; fio-jobs.ts gives the options their values. A file
// that is not a job file (a data file given as the positional) is refused as one.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { UserError } from '../cli-util.js';
import { readInputFile } from '../input-file.js';
import { noteRunFile } from '../run-files.js';
import { stripJobFileLine } from './fio-values.js';

/** One option as written: its name as typed, its text (undefined for a bare `option` line), and
 * where it was (file:line, or the command-line word), for the error that names it. */
export interface FioOptionText {
  name: string;
  value?: string;
  where: string;
}

/** A section of a job file, or a job of the command line (`--name=...` and the options after). */
export interface FioSectionText {
  name: string;
  global: boolean;
  options: FioOptionText[];
  where: string;
  /** The job file it is in, counted from 0 when several are given (fio starts each after the
   * first from its own defaults, behind a stonewall); undefined on the command line. */
  file?: number;
}

/** The bytes of a job file: the one place a job file is opened. `-` is standard input, as fio
 * reads it (a pipe or a file there: `cat job.fio | iolab bench iops -`). */
export function openJobFile(path: string): Buffer {
  if (path === '-') {
    try {
      return readFileSync(0);
    } catch (err) {
      throw new UserError(`-: standard input could not be read as a job file (${(err as NodeJS.ErrnoException).code})`);
    }
  }
  return readInputFile(path, 'a fio job file'); // a FIFO or a folder refused in one line, never waited on
}

function notJobFile(path: string, why: string): UserError {
  return new UserError(`'${path}' is not a fio job file (${why}); ` +
    'the file to benchmark is --filename, and testIOPS mode takes it with -m=rRD|sRD|rWR|sWR');
}

/** The lines of a file with where each came from, `include` lines replaced by the included
 * file's lines (a relative name is looked up beside the including file when it is not found
 * where iolab runs, as fio does). */
function jobFileLines(path: string, depth = 0): { text: string; where: string; line: number }[] {
  const bytes = openJobFile(path);
  if (bytes.includes(0)) throw notJobFile(path, 'it holds binary data');
  const out: { text: string; where: string; line: number }[] = [];
  bytes.toString('utf8').split('\n').forEach((raw, i) => {
    const where = `${path}:${i + 1}`;
    const line = stripJobFileLine(raw);
    const include = /^include\s+(.+)$/.exec(line);
    if (!include) {
      out.push({ text: line, where, line: i + 1 });
      return;
    }
    if (depth > 8) throw new UserError(`${where}: include nests more than 8 files deep`);
    let name = include[1].trim();
    if (!isAbsolute(name) && !existsSync(name) && path !== '-') name = join(dirname(path), name);
    noteRunFile(name, `the include at ${where}`, false); // an input, as the job file is: never a file the run writes
    for (const l of jobFileLines(name, depth + 1)) {
      if (l.text.startsWith('[')) throw new UserError(`${l.where}: an included file holds no [sections] (fio's rule)`);
      out.push(l);
    }
  });
  return out;
}

/** The sections of a fio job file in their order, each with its option lines as written. */
export function readJobFile(path: string): FioSectionText[] {
  const sections: FioSectionText[] = [];
  const lines = jobFileLines(path);
  for (const { text, where, line } of lines) {
    if (text === '') continue;
    const section = /^\[(.+)\]$/.exec(text);
    if (section) {
      sections.push({ name: section[1], global: section[1].startsWith('global'), options: [], where });
      continue;
    }
    const option = /^([A-Za-z_][\w-]*)\s*(?:=\s*(.*))?$/.exec(text);
    if (!option) throw notJobFile(path, `line ${line} is neither a [section] nor an option`);
    const current = sections[sections.length - 1];
    if (current === undefined) throw notJobFile(path, `line ${line} holds an option before any [section]`);
    // fio keeps the blank after '=' in the value: 'rw= randread' fails to parse, 'size= 64k'
    // is 64 bytes; iolab refuses the line rather than guess which the user meant
    if (/=\s/.test(text)) {
      throw new UserError(`${where}: '${text}': fio reads the value with its leading blank (and refuses 'rw= randread', ` +
        `reads 'size= 64k' as 64 bytes); write ${option[1]}=${option[2]?.trim() ?? ''}`);
    }
    current.options.push({ name: option[1], value: option[2]?.trim(), where });
  }
  if (!sections.some((s) => !s.global)) throw notJobFile(path, 'it has no job section');
  return sections;
}

/** The sections of the job files in their order, as fio reads several: each file's own, marked
 * with its place; with fio's --section, the job sections of those names only (every [global]
 * stays), and none of them at all is fio's "No job(s) defined". */
export function readJobFiles(paths: string[], only: string[] = []): FioSectionText[] {
  const all = paths.flatMap((path, file) => readJobFile(path).map((s) => ({ ...s, file })));
  const kept = only.length === 0 ? all : all.filter((s) => s.global || only.includes(s.name));
  if (!kept.some((s) => !s.global)) {
    throw new UserError(`--section ${only.join(', ')}: no job section of that name in ${paths.join(', ')} (fio: "No job(s) defined")`);
  }
  return kept;
}
