// fio's log files (write_lat_log, write_bw_log, write_iops_log, log_avg_msec): which files a job
// writes, named as fio names them (PREFIX_lat.N.log, _clat, _slat, _bw, _iops; N the job's number
// in the job list, from 1; a bare option's prefix is the job's name), checked before any I/O as
// every file a run writes is (an existing one only with --force), and written from the text the
// runner kept (native/bench/job_log.c), in fio's format.
import { UserError } from '../cli-util.js';
import { noteRunFile } from '../run-files.js';
import { checkOutputPath, writeOutputFile } from '../write-target.js';
import type { BenchResult } from '../native.js';

export type LogKind = 'lat' | 'clat' | 'slat' | 'bw' | 'iops';
const KINDS: LogKind[] = ['lat', 'clat', 'slat', 'bw', 'iops'];
/** The runner's bit of each log (job_log.h's LOG_* order). */
const BIT: Record<LogKind, number> = { lat: 1, clat: 2, slat: 4, bw: 8, iops: 16 };

export interface LogOptions {
  write_lat_log?: string | boolean;
  write_bw_log?: string | boolean;
  write_iops_log?: string | boolean;
  log_avg_msec?: number;
}

/** The log files of the job numbered n (from 1), named fio's way; none when it keeps no log. */
export function logFiles(opts: LogOptions, jobName: string, n: number): Partial<Record<LogKind, string>> {
  const files: Partial<Record<LogKind, string>> = {};
  const prefix = (v: string | boolean) => (typeof v === 'string' && v !== '' ? v : jobName);
  if (opts.write_lat_log !== undefined && opts.write_lat_log !== false) {
    for (const k of ['lat', 'clat', 'slat'] as const) files[k] = `${prefix(opts.write_lat_log)}_${k}.${n}.log`;
  }
  if (opts.write_bw_log !== undefined && opts.write_bw_log !== false) files.bw = `${prefix(opts.write_bw_log)}_bw.${n}.log`;
  if (opts.write_iops_log !== undefined && opts.write_iops_log !== false) files.iops = `${prefix(opts.write_iops_log)}_iops.${n}.log`;
  return files;
}

/** The runner's log mask for the files. */
export function logMask(files: Partial<Record<LogKind, string>>): number {
  return KINDS.reduce((m, k) => (files[k] ? m | BIT[k] : m), 0);
}

/** Before any I/O: every log file may be written (the rule of every file a run writes). */
export function checkLogFiles(files: Partial<Record<LogKind, string>>, force: boolean, variants: number): void {
  const paths = Object.entries(files);
  if (paths.length === 0) return;
  if (variants > 1) {
    throw new UserError('write_*_log: iolab runs this job list once per engine or sweep point, and fio\'s log files name a job ' +
      'by its number only; give one engine (and no --sweep) to write them');
  }
  for (const [kind, path] of paths) {
    const option = kind === 'bw' ? 'write_bw_log' : kind === 'iops' ? 'write_iops_log' : 'write_lat_log';
    checkOutputPath(path, option, { force, createFolders: false });
    noteRunFile(path, option, true, true);
  }
}

/** Writes the logs of one result's jobs: `files[i]` for its i-th job that keeps logs. */
export function writeLogs(result: BenchResult | undefined, files: Partial<Record<LogKind, string>>[]): void {
  const texts = result?.logs ?? [];
  texts.forEach((text, i) => {
    for (const k of KINDS) {
      const path = files[i]?.[k];
      if (path !== undefined && text[k] !== undefined) writeOutputFile(path, text[k], `write_${k === 'clat' || k === 'slat' ? 'lat' : k}_log`);
    }
  });
}
