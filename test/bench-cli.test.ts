// `iolab bench iops`, `bench latency` and `gen` as a user runs them: tables, fio-shaped JSON,
// every refused input (one line, before any I/O), verify catching corruption, testIOPS mode, --vs-fio.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { existsSync, readFileSync, statSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { logicalBlockSize } from '../src/bench/storage-job.js';
import { runCli } from './support/cli.js';
import { shortTempDir } from './support/temp.js';

let dir: ReturnType<typeof shortTempDir>;
const file = (name: string) => join(dir.path, name);
/** runCli with stdout/stderr as strings. */
async function cli(args: string[]) {
  const r = await runCli(args);
  return { exitCode: r.exitCode, stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? '') };
}
const iops = (...args: string[]) => cli(['bench', 'iops', ...args]);
const fioInstalled = (await execa('fio', ['--version'], { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;

beforeAll(() => {
  dir = shortTempDir('iolab-cli-');
});
afterAll(() => dir.cleanup());

// CLI runs start node + tsx each (seconds under ASan): generous timeouts
describe.concurrent('bench iops', { timeout: 120_000 }, () => {
  it('prints one row per engine', async () => {
    const r = await iops('--filename', file('rows.dat'), '--size', '1m', '--rw', 'randread', '--iodepth', '4',
      '--ioengine', 'psync,io_uring', '--runtime', '300ms');
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    // a loaded machine may end a 300 ms row under 100 I/Os: its note line is not a row
    const lines = r.stdout.trim().split('\n').filter((l) => !l.startsWith('note: '));
    expect(lines[0]).toBe(`iolab bench iops: randread bs=4096 iodepth=4 numjobs=1 size=1MiB direct=0 runtime=0.3s file=${file('rows.dat')}`);
    expect(lines[1].split(/\s+/)).toEqual(['engine', 'IOPS', 'MiB/s', 'clat', 'p50', 'clat', 'p99', 'clat', 'p99.9', 'usr', 'sys', 'CPU/IO']);
    expect(lines[2]).toMatch(/^psync\s+[\d,]+\s+[\d.]+\s+\S+s\s+\S+s\s+\S+s\s+[\d.]+%\s+[\d.]+%\s+[\d.]+us$/);
    expect(lines[3]).toMatch(/^io_uring\s+[\d,]+\s/);
    expect(lines).toHaveLength(4);
  });

  it("writes JSON with fio's keys for every engine, io count x bs = bytes", async () => {
    const r = await iops('--filename', file('json.dat'), '--size', '1m', '--rw', 'randrw', '--rwmixread', '70',
      '--iodepth', '4', '--number_ios', '64', '--verify', '--ioengine', 'all', '--output-format', 'json');
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.jobs.map((j: { jobname: string }) => j.jobname)).toEqual(['sync', 'psync', 'io_uring', 'libaio', 'posixaio', 'mmap']);
    for (const j of out.jobs) {
      expect(j.error).toBe(0);
      expect(j.read.total_ios + j.write.total_ios).toBe(64);
      for (const d of [j.read, j.write]) {
        expect(Object.keys(d)).toEqual(expect.arrayContaining(['io_bytes', 'bw', 'bw_bytes', 'iops', 'runtime', 'total_ios', 'slat_ns', 'clat_ns', 'lat_ns']));
        expect(d.io_bytes).toBe(d.total_ios * 4096);
        expect(d.bw).toBe(Math.floor(d.bw_bytes / 1024));
        expect(Object.keys(d.clat_ns)).toEqual(expect.arrayContaining(['min', 'max', 'mean', 'stddev', 'percentile']));
        expect(Object.keys(d.clat_ns.percentile)).toContain('99.000000');
        expect(Object.keys(d.clat_ns.percentile)).toHaveLength(17);
      }
      expect(typeof j.usr_cpu).toBe('number');
      expect(typeof j.sys_cpu).toBe('number');
    }
  });

  it("help lists the engines and their options from the native table, and hides the test-only ones", async () => {
    const r = await iops('--help');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/--ioengine <list>\s+engine, comma list or 'all' \(sync, psync, io_uring, libaio, posixaio, mmap; also pvsync, pvsync2, null when named\)/);
    expect(r.stdout).toMatch(/--fixedbufs \[0\|1\]\s+io_uring: registered buffers \(READ_FIXED\/WRITE_FIXED\); default 0/);
    expect(r.stdout).toMatch(/--sqthread_poll \[0\|1\]\s+io_uring: a kernel thread polls the SQ \(SQPOLL\); default 0/);
    expect(r.stdout).not.toMatch(/test_delay|test_nodata/);
    expect(r.stdout).not.toMatch(/(?<!rand)seed|notes/);  // fio's --randseed is fio's name
  });

  it('takes posix_aio for posixaio and prints one name', async () => {
    const r = await iops('--filename', file('alias.dat'), '--size', '1m', '--ioengine', 'posix_aio', '--number_ios', '10');
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n')[2]).toMatch(/^posixaio\s+[\d,]+\s/);
  });

  it('verify catches a corrupted block and names its offset', async () => {
    const f = file('verify.dat');
    const w = await iops('--filename', f, '--size', '1m', '--rw', 'write', '--verify', '--ioengine', 'psync');
    expect(w.exitCode).toBe(0);
    expect(w.stdout).toContain('verify: every block read matched its pattern; 256 written blocks read back and checked');
    // a block goes bad under the file system (its mtime stays what iolab left: the mark still holds)
    await execa('touch', ['-r', f, `${f}.times`]);
    const fd = openSync(f, 'r+');
    writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, 40960);
    closeSync(fd);
    await execa('touch', ['-r', `${f}.times`, f]);
    const r = await iops('--filename', f, '--size', '1m', '--rw', 'read', '--verify', '--ioengine', 'io_uring', '--direct');
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/^iolab: verify failed: block at offset 40960 \(bs 4096\) of '.*verify\.dat' does not hold what was written there \(first bad byte at offset 4096\d\)$/);
  });

  it('refuses bad input with one line and no I/O', async () => {
    const foreign = file('foreign.dat');
    writeFileSync(foreign, Buffer.alloc(1 << 20, 7));
    const tiny = file('tiny.dat');
    writeFileSync(tiny, 'x'.repeat(100));
    const f = file('bad.dat');
    const cases: [string[], RegExp][] = [
      [['--ioengine', 'nope'], /^iolab: unknown ioengine 'nope' \(known: sync, psync, io_uring, libaio, posixaio, mmap, pvsync, pvsync2, null, all\)$/],
      [['--rw', 'sideways'], /^iolab: unknown rw 'sideways'/],
      [['--iodepth', '0'], /argument '0' is invalid\. expected a whole number from 1 to 65536/],
      [['--iodepth', '65536', '--ioengine', 'psync,io_uring'],
        /^iolab: --iodepth: expected a whole number from 1 to 32768 \(io_uring's entry limit, IORING_MAX_ENTRIES\), got '65536'$/],
      [['--sweep', 'iodepth=1,40000', '--ioengine', 'io_uring'], /^iolab: --iodepth: expected a whole number from 1 to 32768/],
      [['--direct', 'yes'], /argument 'yes' is invalid\. expected 0 or 1, got 'yes'/],
      [['--fixedbufs', '--ioengine', 'psync'], /^iolab: --fixedbufs is an option of io_uring, which --ioengine does not include$/],
      [['--fadvise_hint', 'often'], /^iolab: --fadvise_hint: expected 0, 1, sequential or random, got 'often'$/],
      [['--sweep', 'depth=1,2'], /^iolab: --sweep: expected iodepth=, bs=, numjobs= or rw= and a comma list/],
      [['--numjobs=-2'], /argument '-2' is invalid\. expected a whole number from 1 to 1024/],
      [['--size', '0'], /argument '0' is invalid\. expected a size >= 1 \(bytes; k, m, g, t suffixes\)/],
      [['--runtime', '0'], /^iolab: option '--runtime <time>' argument '0' is invalid\. expected a duration > 0/],
      // fio's spelling, a time the job cannot keep: iolab's words for the option and what it takes
      [['-runtime=10us'], /^iolab: option '--runtime <time>' argument '10us' is invalid\. expected a whole number of milliseconds \(1ms or more\), got '10us'$/],
      [['-runtime=999999999999'], /^iolab: option '--runtime <time>' argument '999999999999' is invalid\. expected a duration of at most 1000000000s, got '999999999999'$/],
      [['-ramp_time=1500us'], /^iolab: option '--ramp_time <time>' argument '1500us' is invalid\. expected a whole number of milliseconds/],
      [['--time_based'], /^iolab: --time_based needs --runtime$/],
      [['--size', '100t'], /^iolab: not enough free space to lay out '.*bad\.dat': needs \d+ MiB more, \d+ MiB free$/],
      [['--bs', '8k', '--size', '4k'], /^iolab: --size \(4096 bytes\) is smaller than one block \(--bs 8192\)$/],
    ];
    if (logicalBlockSize(dir.path)) {
      cases.push([['--direct', '--bs', '1000'], /^iolab: --direct needs --bs to be a multiple of the logical block size of \S+ \(\d+ bytes\); got 1000$/]);
    }
    const runs = await Promise.all(cases.map(([args]) => iops('--filename', f, '--size', '1m', ...args)));
    for (const [i, [args, message]] of cases.entries()) {
      const r = runs[i];
      expect(r.exitCode, args.join(' ')).not.toBe(0);
      expect(r.stderr.split('\n')[0], args.join(' ')).toMatch(message);
      expect(r.stdout).toBe('');
      expect(existsSync(f), args.join(' ')).toBe(false);
    }
    const small = await iops('--filename', tiny, '--rw', 'read', '--ioengine', 'psync');
    expect(small.stderr).toMatch(/^iolab: '.*tiny\.dat' is smaller than one block \(100 bytes < bs 4096\)$/);
    const proc = await iops('--filename', '/proc/iolab.dat', '--ioengine', 'psync');
    expect(proc.stderr).toBe("iolab: --filename: '/proc/iolab.dat' is on /proc (proc), a file system that holds no regular " +
      'files to benchmark; choose a path on a disk file system or tmpfs');
    const writers = [['--filename', foreign, '--rw', 'randwrite'], [foreign, '-m=rWR', '--runtime', '300ms']];
    for (const refused of await Promise.all(writers.map((args) => iops(...args, '--ioengine', 'psync')))) {
      expect(refused.exitCode).toBe(1);
      expect(refused.stderr).toMatch(/^iolab: refusing to write into '.*foreign\.dat': iolab did not create it, or it changed since \(use --force to allow\)$/);
    }
    expect(readFileSync(foreign).every((b) => b === 7)).toBe(true);
    // reading a file iolab did not create is fine (the whole file, without --size), and leaves it alone
    const read = await iops('--filename', foreign, '--rw', 'randread', '--ioengine', 'psync', '--number_ios', '10');
    expect(read.exitCode).toBe(0);
    expect(statSync(foreign).size).toBe(1 << 20);
  });

  it("testIOPS mode prints the ebpf-io_uring benchmark's four lines once each", async () => {
    const r = await iops(file('testiops.dat'), '-m=rRD', '--runtime', '300ms', '--size', '4m');
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    ['sync', 'io_uring', 'posixaio', 'libaio'].forEach((engine, i) => {
      expect(lines[i]).toMatch(new RegExp(`^${engine}: random read operates with bs 4 KB, IOPS: \\d+ /seconds$`));
    });
  });

  it.runIf(fioInstalled)('--vs-fio runs fio on the same job and prints the ratio', async () => {
    const r = await iops('--filename', file('vsfio.dat'), '--size', '4m', '--rw', 'randread', '--ioengine', 'psync,libaio',
      '--iodepth', '4', '--runtime', '300ms', '--time_based', '--vs-fio', '--repeat', '2');
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^iolab bench iops --vs-fio \(fio-[\d.]+, mean of 2 rounds\)/);
    expect(lines[1].split(/\s{2,}/)).toEqual(['engine', 'iolab IOPS', 'fio IOPS', 'IOPS iolab/fio', 'iolab CPU/IO', 'fio CPU/IO',
      'CPU/IO iolab/fio', 'iolab clat p99', 'fio clat p99']);
    expect(lines[2]).toMatch(/^psync\s+[\d,]+\s+[\d,]+\s+\d+\.\d\dx\s+[\d.]+us\s+[\d.]+us\s+\d+\.\d\dx\s/);
    expect(lines[3]).toMatch(/^libaio\s+[\d,]+\s+[\d,]+\s+\d+\.\d\dx\s/);
    // Each ratio column is its two columns divided, iolab over fio (to the rounding of the
    // figures printed). How far apart the two run is the machine's, not held here (bench-fio's
    // --sweep --vs-fio test holds the IOPS ratio to 10x either way).
    for (const line of lines.slice(2, 4)) {
      const [, iolabIops, fioIops, ratio, iolabCpu, fioCpu, cpuRatio] = line.split(/\s{2,}/).map((c) => Number.parseFloat(c.replace(/,/g, '')));
      expect(Math.abs(ratio! - iolabIops! / fioIops!), line).toBeLessThanOrEqual(0.01 + 0.01 * ratio!);
      expect(Math.abs(cpuRatio! - iolabCpu! / fioCpu!), line).toBeLessThanOrEqual(0.01 + 0.05 * cpuRatio!);
    }
  });
});

describe.concurrent('gen and bench latency', { timeout: 120_000 }, () => {
  it('gen writes printable text and refuses to overwrite without --force', async () => {
    const f = file('dict.txt');
    const r = await cli(['gen', f, '--size', '100k']);
    expect(r.stdout).toBe(`wrote 102400 bytes of random printable text to ${f}`);
    expect(r.stderr).toBe('');  // progress only on a terminal
    const text = readFileSync(f);
    expect(text.length).toBe(102400);
    expect(text.every((b) => b === 0x0a || (b >= 0x20 && b <= 0x7e))).toBe(true);
    expect(text[79]).toBe(0x0a);
    const again = await cli(['gen', f, '--size', '1k']);
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toBe(`iolab: refusing to overwrite '${f}': it exists (use --force)`);
    expect((await cli(['gen', f, '--size', '1k', '--force'])).exitCode).toBe(0);
    expect(statSync(f).size).toBe(1024);
  });

  it('bench latency reads 64 and writes 64 blocks per engine', async () => {
    const infile = file('lat-in.txt');
    const outfile = file('lat-out.dat');
    await cli(['gen', infile, '--size', '64k']);
    const r = await cli(['bench', 'latency', '--engine', 'sync,posix_aio', '--infile', infile, '--outfile', outfile, '--json']);
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.engines.map((e: { engine: string }) => e.engine)).toEqual(['sync', 'posixaio']);  // both spellings, one name
    expect(out.command).toEqual(['iolab', 'bench', 'latency', '--engine', 'sync,posix_aio', '--infile', infile, '--outfile', outfile, '--json']);
    expect(out.machine.cores).toBeGreaterThan(0);
    for (const e of out.engines) {
      expect(e.read.ios).toBe(64);
      expect(e.write.ios).toBe(64);
      expect(e.read.mean_ns).toBeGreaterThan(0);
      expect(e.write.p99_ns).toBeGreaterThanOrEqual(e.write.p50_ns);
    }
    expect(statSync(outfile).size).toBe(64 * 4096);
    const table = await cli(['bench', 'latency', '--engine', 'io_uring', '--infile', infile, '--outfile', outfile]);
    expect(table.exitCode).toBe(0);
    expect(table.stdout.split('\n')[1].split(/\s{2,}/)).toEqual(['engine', 'read mean', 'read p50', 'read p99', 'write mean', 'write p50', 'write p99']);
    expect(table.stdout.split('\n')[2]).toMatch(/^io_uring\s+\S+s\s/);
    // writing the file it reads: refused as the same file, --force or not
    for (const force of [[], ['--force']]) {
      const refused = await cli(['bench', 'latency', '--engine', 'sync', '--infile', infile, '--outfile', infile, ...force]);
      expect(refused.stderr).toMatch(/^iolab: --outfile: '.*lat-in\.txt' is the same file as --infile '.*lat-in\.txt' of this run; name another file \(--force does not change this\)$/);
    }
    const missing = await cli(['bench', 'latency', '--infile', file('nope'), '--outfile', outfile]);
    expect(missing.stderr).toMatch(/^iolab: ENOENT: no such file or directory, stat '.*nope'$/);
  });
});
