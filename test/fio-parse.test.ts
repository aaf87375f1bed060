// How iolab reads fio's text, rule by rule, through the bench iops command's own parser: lines
// cut at ';' and '#', ${VAR} and fio's words, whole-number arithmetic as bc does it, filename
// lists, the job list's precedence, groupids and clones, and every option of fio's table either
// run or refused by name (none ignored).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { iopsCommand } from '../src/bench/iops.js';
import { FIO_OPTION_NAMES } from '../src/bench/fio-names.js';
import { FIO_ALIASES, splitFilenames, stripJobFileLine, substituteValue, wholeArithmetic } from '../src/bench/fio-values.js';
import { fioJobList } from '../src/bench/fio-jobs.js';
import { splitFioArgv } from '../src/bench/fio-cli.js';
import type { FioSectionText } from '../src/bench/fio-jobfile.js';
import { native } from '../src/native.js';

const cmd = iopsCommand();
const section = (name: string, lines: string[]): FioSectionText => ({
  name, global: name.startsWith('global'), where: `job.fio:1`,
  options: lines.map((l, i) => {
    const [k, ...v] = l.split('=');
    return { name: k, value: v.length ? v.join('=') : undefined, where: `job.fio:${i + 2}` };
  }),
});
const noCommandLine = { global: section('global', []), jobs: [] };

describe('a job file\'s text', () => {
  it('is cut at its first ; and then its first #, wherever they are, and trimmed', () => {
    expect(stripJobFileLine('filename=data.bin ; the data file')).toBe('filename=data.bin');
    expect(stripJobFileLine('  numjobs=2 ; 2 simultaneous threads')).toBe('numjobs=2');
    expect(stripJobFileLine('bs=4k;x#y')).toBe('bs=4k');
    expect(stripJobFileLine('size=1m# comment ; more')).toBe('size=1m');
    fc.assert(fc.property(fc.string(), (s) => {
      const out = stripJobFileLine(s);
      expect(out).not.toMatch(/[;#]/);
      expect(s.includes(out)).toBe(true);
    }));
  });

  it('takes ${VAR} from the environment, nothing when unset, and fio\'s $pagesize, $mb_memory, $ncpus', () => {
    expect(substituteValue('filename', '${A}/${B}x', { A: 'dir' })).toBe('dir/x');
    expect(substituteValue('bs', '$pagesize')).toBe(String(native.constants.PAGE_SIZE));
    expect(Number(substituteValue('size', '$mb_memory'))).toBeGreaterThan(0);
    expect(substituteValue('size', '$pagesize*4+1')).toBe(String(native.constants.PAGE_SIZE * 4 + 1));
    expect(substituteValue('numjobs', '$ncpus/$ncpus')).toBe('1');
    // arithmetic only when one of fio's words was used, as fio hands only those to bc
    expect(substituteValue('filename', 'a-b*c')).toBe('a-b*c');
    expect(() => substituteValue('size', '$pagesize*4k')).toThrow(/size=\$pagesize\*4k: fio hands '\d+\*4k' to bc/);
  });

  it('computes whole-number arithmetic as bc does with scale 0: precedence, parentheses, division truncated', () => {
    expect(wholeArithmetic('7/2')).toBe(3);
    expect(wholeArithmetic('-7/2')).toBe(-3);
    expect(wholeArithmetic('2+3*4')).toBe(14);
    expect(wholeArithmetic('(2+3)*4')).toBe(20);
    expect(wholeArithmetic('1/0')).toBeUndefined();
    expect(wholeArithmetic('4k')).toBeUndefined();
    fc.assert(fc.property(fc.nat(1000), fc.nat(1000), fc.integer({ min: 1, max: 1000 }), (a, b, c) => {
      expect(wholeArithmetic(`${a} + ${b} * ${c}`)).toBe(a + b * c);
      expect(wholeArithmetic(`(${a}+${b})/${c}`)).toBe(Math.trunc((a + b) / c));
    }));
  });

  it('splits a filename list at each colon not escaped with a backslash, skipping empty names, as fio', () => {
    expect(splitFilenames('a:b')).toEqual(['a', 'b']);
    expect(splitFilenames('a\\:b')).toEqual(['a:b']);
    expect(splitFilenames('::a::b:')).toEqual(['a', 'b']);
    expect(splitFilenames('/dev/a:/tmp/b\\:c')).toEqual(['/dev/a', '/tmp/b:c']);
  });
});

describe('the job list', () => {
  it('gives the command line\'s globals to every job, then the job file\'s [global] and its sections, each over the one before', () => {
    const { fio } = splitFioArgv(cmd, ['--bs=16k', '--size=1m', '--name=cl', '--rw=write']);
    const list = fioJobList(cmd, fio, [section('a', ['bs=8k']), section('global', ['size=2m']), section('b', [])]);
    expect(list.jobs.map((j) => [j.name, j.options.bs, j.options.size, j.options.rw])).toEqual([
      ['cl', 16384, 1 << 20, 'write'], ['a', 8192, 1 << 20, undefined], ['b', 16384, 2 << 20, undefined]]);
    expect(list.globalOptions).toEqual({ bs: '16k', size: '2m' });
    expect(list.fioJob).toBe(true);
  });

  it('counts groups at stonewall and new_group after a group with jobs; clones share their job\'s group and files', () => {
    const list = fioJobList(cmd, noCommandLine, [section('a', ['stonewall', 'numjobs=2']), section('b', ['new_group']),
      section('c', []), section('d', ['wait_for_previous', 'filename=x:y\\:z', 'numjobs=2'])]);
    expect(list.jobs.map((j) => [j.name, j.clone, j.groupid, j.stonewall, j.filenames.join('|')])).toEqual([
      ['a', 0, 0, true, 'a.0.0'], ['a', 1, 0, false, 'a.1.0'], ['b', 0, 1, false, 'b.0.0'], ['c', 0, 1, false, 'c.0.0'],
      ['d', 0, 2, true, 'x|y:z'], ['d', 1, 2, false, 'x|y:z']]);
  });

  it('reads fio\'s aliases as their options, and a section\'s name= as its jobname (its file keeps the section\'s)', () => {
    const list = fioJobList(cmd, noCommandLine, [section('s', ['readwrite=randrw', 'rwmixwrite=20', 'blocksize=2k', 'timeout=3',
      'iodepth_batch_submit=4', 'iodepth_batch_complete=2', 'buffered=0', 'name=renamed'])]);
    expect(list.jobs[0]).toMatchObject({ name: 'renamed', filenames: ['s.0.0'] });
    expect(list.jobs[0].options).toMatchObject({ rw: 'randrw', rwmixread: 80, bs: 2048, runtime: 3000, iodepth_batch: 4,
      iodepth_batch_complete: 2, direct: true });
  });

  it('runs or refuses by name every option of fio\'s table and every alias: none is taken and ignored', () => {
    const runs: string[] = [];
    for (const name of [...FIO_OPTION_NAMES, ...Object.keys(FIO_ALIASES)].sort()) {
      try {
        fioJobList(cmd, noCommandLine, [section('j', [`${name}=1`])]);
        runs.push(name);
      } catch (err) {
        const message = (err as Error).message;
        if (!message.startsWith(`job.fio:2: '${name}': `) || !message.includes('a fio option iolab doesn\'t run')) runs.push(name);
      }
    }
    // each of these is run (or refused with its own reason, such as a value it does not take)
    // (fio options at their default, do_verify=1, create_fsync=1..., are accepted, as iolab does what the default does)
    expect(runs).toEqual(['allow_file_create', 'atomic', 'ba', 'blockalign', 'blocksize', 'blocksize_range', 'bs', 'bsrange',
      'bssplit', 'buffer_compress_chunk', 'buffer_compress_percentage', 'buffered', 'clat_percentiles', 'cmdprio',
      'cmdprio_bssplit', 'cmdprio_class', 'cmdprio_hint', 'cmdprio_percentage', 'create_fsync', 'create_serialize',
      'dedupe_global', 'dedupe_mode', 'dedupe_percentage', 'dedupe_working_set_percentage', 'description', 'direct', 'directory',
      'disk_util', 'do_verify', 'end_fsync', 'end_syncfs', 'exit_what', 'exitall', 'fadvise_hint', 'fdatasync',
      'file_service_type', 'filename', 'fileoffset', 'filesize', 'fixedbufs', 'flow', 'flow_id', 'flow_sleep', 'fsync',
      'group_reporting', 'gtod_reduce', 'hipri', 'invalidate', 'io_limit', 'io_size', 'io_submit_mode', 'iodepth',
      'iodepth_batch', 'iodepth_batch_complete', 'iodepth_batch_complete_max', 'iodepth_batch_complete_min',
      'iodepth_batch_submit', 'ioengine', 'latency_percentile', 'latency_run', 'latency_target', 'latency_window',
      'log_avg_msec', 'log_offset', 'log_prio', 'loops', 'name', 'new_group', 'norandommap', 'nr_files', 'nrfiles', 'number_ios',
      'numjobs', 'offset', 'offset_increment', 'overwrite', 'per_job_logs', 'prio', 'prioclass', 'ramp_size', 'ramp_time',
      'random_distribution', 'random_generator', 'randrepeat', 'randseed', 'rate', 'rate_iops', 'rate_process', 'readwrite',
      'refill_buffers', 'registerfiles', 'runtime', 'rw', 'rwmixread', 'rwmixwrite', 'size', 'sqthread_poll', 'ss', 'ss_dur',
      'ss_interval', 'ss_ramp', 'stats', 'steadystate', 'steadystate_check_interval', 'steadystate_duration',
      'steadystate_ramp_time', 'stonewall', 'sync', 'thinktime', 'thinktime_blocks', 'thread', 'time_based', 'timeout',
      'uncached', 'unique_filename', 'unlink', 'verify', 'verify_backlog', 'verify_backlog_batch', 'verify_dump',
      'verify_pattern', 'wait_for', 'wait_for_previous', 'write_bw_log', 'write_iops_log', 'write_lat_log', 'zonemode',
      'zonerange', 'zonesize', 'zoneskip']);
  });

  it('refuses a filename that names no file, as fio does ("failed parsing filename="), and so an unset ${VAR}', () => {
    delete process.env.IOLAB_PARSE_UNSET_DEV;
    expect(() => fioJobList(cmd, noCommandLine, [section('j', ['filename=${IOLAB_PARSE_UNSET_DEV}'])]))
      .toThrow(/^job\.fio:2: filename=\$\{IOLAB_PARSE_UNSET_DEV\} names no file \(\$\{IOLAB_PARSE_UNSET_DEV\} is not set\); fio refuses it too/);
    expect(() => fioJobList(cmd, noCommandLine, [section('j', ['filename='])])).toThrow(/names no file; fio refuses it too/);
  });

  it('refuses in a job file the engine spellings fio cannot load: a list, all, posix_aio', () => {
    for (const [value, why] of [['psync,libaio', /an engine list is iolab's own --ioengine/], ['all', /'all' is iolab's own --ioengine list/],
      ['posix_aio', /fio names this engine posixaio \(fio: "engine posix_aio not loadable"\); write ioengine=posixaio/]] as const) {
      expect(() => fioJobList(cmd, noCommandLine, [section('j', [`ioengine=${value}`])])).toThrow(why);
    }
    expect(fioJobList(cmd, noCommandLine, [section('j', ['ioengine=posixaio'])]).jobs[0].options.ioengine).toEqual(['posixaio']);
  });

  it('refuses an engine\'s option before its ioengine= in a fio job, as fio does, and takes it after', () => {
    expect(() => fioJobList(cmd, noCommandLine, [section('j', ['sqthread_poll', 'ioengine=io_uring'])]))
      .toThrow(/^job\.fio:2: 'sqthread_poll': an option of io_uring, given before its ioengine=/);
    const { fio } = splitFioArgv(cmd, ['--name=x', '--sqthread_poll', '--ioengine=io_uring']);
    expect(() => fioJobList(cmd, fio, undefined)).toThrow(/^--sqthread_poll: an option of io_uring, given before its ioengine=/);
    const after = splitFioArgv(cmd, ['--name=x', '--ioengine=io_uring', '--sqthread_poll']).fio;
    expect(fioJobList(cmd, after, undefined).jobs[0].options.sqthread_poll).toBe(true);
    // iolab's own command line (no --name, no job file) takes its flags in any order
    const own = splitFioArgv(cmd, ['--sqthread_poll', '--ioengine=io_uring']).fio;
    expect(fioJobList(cmd, own, undefined).jobs[0].options.sqthread_poll).toBe(true);
  });

  it('refuses an option fio does not know by file, line and name', () => {
    expect(() => fioJobList(cmd, noCommandLine, [section('j', ['frobnicate=3'])])).toThrow(/^job\.fio:2: unknown option 'frobnicate'$/);
  });
});
