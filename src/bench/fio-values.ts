// How fio 3.33 reads the text of an option, the same in a job file and on the command line: a
// job-file line cut at its first ';' and then its first '#' (fio's strip_blank_end), ${VAR}
// from the environment, fio's own $pagesize, $mb_memory and $ncpus (with their arithmetic,
// which fio hands to bc), its aliases (readwrite, blocksize, timeout...), the inverse options
// (rwmixwrite, buffered), and a filename list split on ':' ('\:' keeps a colon).
import { readdirSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { native } from '../native.js';
import { UserError } from '../cli-util.js';

/** fio's alias -> the option's name (fio's option table, options.c). */
export const FIO_ALIASES: Readonly<Record<string, string>> = {
  readwrite: 'rw', blocksize: 'bs', iodepth_batch_submit: 'iodepth_batch',
  iodepth_batch_complete: 'iodepth_batch_complete_min', timeout: 'runtime', wait_for_previous: 'stonewall',
  io_limit: 'io_size', fill_fs: 'fill_device', fileoffset: 'offset', blockalign: 'ba',
  blocksize_range: 'bsrange', blocksize_unaligned: 'bs_unaligned', nr_files: 'nrfiles', iomem: 'mem',
  mem_align: 'iomem_align', ratemin: 'rate_min', ratecycle: 'rate_cycle', disable_bw: 'disable_bw_measurement',
  ss: 'steadystate', ss_dur: 'steadystate_duration', ss_ramp: 'steadystate_ramp_time', ss_interval: 'steadystate_check_interval',
};

/** Names fio 3.33 takes for an option without listing them as its aliases: `threads=1` (fio's
 * steadystate and waitfor examples) is thread, and its JSON shows it as written. */
export const FIO_SPELLINGS: Readonly<Record<string, string>> = { threads: 'thread' };

/** Options fio defines as the other side of one iolab runs: rwmixwrite=30 is rwmixread=70,
 * buffered=0 is direct=1. */
export const FIO_INVERSES: Readonly<Record<string, { option: string; value: (text: string) => string }>> = {
  rwmixwrite: { option: 'rwmixread', value: (t) => (/^\d+$/.test(t.trim()) ? String(100 - Number(t.trim())) : t) },
  buffered: { option: 'direct', value: (t) => (t.trim() === '0' ? '1' : t.trim() === '1' ? '0' : t) },
};

/** The option name fio means by a name as written (an alias gives its option). */
export function fioOptionName(name: string): string {
  return FIO_ALIASES[name] ?? name;
}

/** A job-file line as fio's parser reads it: blanks trimmed, everything from the first ';' on
 * cut, then everything from the first '#' on (anywhere in the line: `bs=4k;x` is bs=4k). */
export function stripJobFileLine(line: string): string {
  let s = line;
  const semi = s.indexOf(';');
  if (semi >= 0) s = s.slice(0, semi);
  const hash = s.indexOf('#');
  if (hash >= 0) s = s.slice(0, hash);
  return s.trim();
}

/** The CPUs configured, as fio counts them for $ncpus (sysconf(_SC_NPROCESSORS_CONF): the
 * cpuN folders of sysfs). */
function cpusConfigured(): number {
  try {
    const n = readdirSync('/sys/devices/system/cpu').filter((d) => /^cpu\d+$/.test(d)).length;
    if (n > 0) return n;
  } catch {
    // no sysfs: the CPUs the system reports
  }
  return cpus().length;
}

/** fio's reserved words, each with its value on this machine. */
function keywords(): [string, string][] {
  return [
    ['$pagesize', String(native.constants.PAGE_SIZE)],
    ['$mb_memory', String(Math.floor(totalmem() / 2 ** 20))],
    ['$ncpus', String(cpusConfigured())],
  ];
}

/** Whole-number arithmetic as bc does it with its default scale 0 (a division truncates):
 * + - * / and parentheses. undefined when the text is anything else. */
export function wholeArithmetic(text: string): number | undefined {
  const tokens = text.match(/\d+|[-+*/()]|\S/g) ?? [];
  let i = 0;
  const primary = (): number | undefined => {
    const t = tokens[i++];
    if (t === '(') {
      const v = sum();
      return tokens[i++] === ')' ? v : undefined;
    }
    if (t === '-') {
      const v = primary();
      return v === undefined ? undefined : -v;
    }
    return t !== undefined && /^\d+$/.test(t) ? Number(t) : undefined;
  };
  const product = (): number | undefined => {
    let v = primary();
    while (v !== undefined && (tokens[i] === '*' || tokens[i] === '/')) {
      const op = tokens[i++];
      const r = primary();
      if (r === undefined || (op === '/' && r === 0)) return undefined;
      v = op === '*' ? v * r : Math.trunc(v / r);
    }
    return v;
  };
  const sum = (): number | undefined => {
    let v = product();
    while (v !== undefined && (tokens[i] === '+' || tokens[i] === '-')) {
      const op = tokens[i++];
      const r = product();
      if (r === undefined) return undefined;
      v = op === '+' ? v + r : v - r;
    }
    return v;
  };
  const v = sum();
  return v !== undefined && i === tokens.length && Number.isSafeInteger(v) ? v : undefined;
}

/**
 * An option's value as fio substitutes it: each ${VAR} becomes the environment's value (nothing
 * when unset, as fio), then $pagesize, $mb_memory and $ncpus their values on this machine; when
 * one of those was used and the value holds + - * or /, fio computes it with bc, and iolab
 * computes it the same way when it is whole-number arithmetic (refused by name otherwise).
 */
export function substituteValue(name: string, value: string, env: NodeJS.ProcessEnv = process.env): string {
  let out = value.replace(/\$\{([^}]+)\}/g, (_, v: string) => env[v] ?? '');
  let replaced = false;
  for (const [word, replacement] of keywords()) {
    if (out.includes(word)) {
      out = out.split(word).join(replacement);
      replaced = true;
    }
  }
  // fio looks for the operators in the whole `name=value` text, and skips any with a quote
  if (!replaced || !/[-+*/]/.test(`${name}=${out}`) || out.includes('\'')) return out;
  const computed = wholeArithmetic(out);
  if (computed === undefined) {
    throw new UserError(`${name}=${value}: fio hands '${out}' to bc; iolab computes only whole-number arithmetic ` +
      '(+ - * / and parentheses) with $pagesize, $mb_memory and $ncpus');
  }
  return String(computed);
}

/** fio's filename list: names separated by ':', a '\:' being a colon within a name. */
/** The files of a list as fio's filename= takes them: ':' between, a colon in a name as '\:'. */
export function joinFilenames(names: string[]): string {
  return names.map((n) => n.replaceAll(':', '\\:')).join(':');
}

export function splitFilenames(value: string): string[] {
  const names: string[] = [];
  let current = '';
  for (let i = 0; i < value.length; i++) {
    if (value[i] === '\\' && value[i + 1] === ':') {
      current += ':';
      i++;
    } else if (value[i] === ':') {
      names.push(current);
      current = '';
    } else {
      current += value[i];
    }
  }
  names.push(current);
  return names.filter((n) => n !== '');
}
