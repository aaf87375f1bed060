// fio's own flags and fio 3.42's options through `iolab bench iops`: --showcmd's quoting as fio
// writes it, json+ (each completion latency bucket), --minimal refused with its reason,
// --eta-newline, io_uring's hipri run as fio runs it, offset= of a user's file (never grown),
// and 3.42's uncached (RWF_DONTCACHE), atomic (RWF_ATOMIC), ramp_size and end_syncfs, each seen
// where the kernel shows it (the pages a read leaves cached, the error a flag earns, the calls
// strace sees). fio itself is the oracle in test/fio-differential.test.ts.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const has = async (cmd: string, args: string[]) => (await execa(cmd, args, { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;
const fio = await has('fio', ['--version']);
const strace = await has('strace', ['-V']);
const fincore = await has('fincore', ['--version']);
const dir = shortTempDir('iolab-fioflags-');
checkLeaksAfterAll(dir);
let n = 0;
/** A folder of its own for a test. */
function place(): string {
  const cwd = join(dir.path, `t${n++}`);
  mkdirSync(cwd);
  return cwd;
}
const iops = (args: string[], cwd: string) => runCliText(['bench', 'iops', ...args], { cwd });
async function json(args: string[], cwd: string) {
  const r = await iops([...args, '--json'], cwd);
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  return JSON.parse(r.stdout);
}
/** The bytes of a file's pages in the page cache (fincore). */
async function cachedBytes(file: string): Promise<number> {
  return Number(String((await execa('fincore', ['--bytes', '--noheadings', '--output', 'RES', file])).stdout).trim());
}

describe.concurrent('fio\'s own flags', { timeout: 300_000 }, () => {
  it('--showcmd writes description in double quotes, as fio does, and any value with a blank quoted so a shell keeps it whole', async () => {
    const cwd = place();
    const job = join(cwd, 'q.fio');
    writeFileSync(job, '[global]\nsize=64k\n[a]\ndescription=some words here\nfilename=a b.dat\nrw=read\n');
    const r = await iops(['--showcmd', job], cwd);
    expect(r.stdout).toBe('iolab bench iops --size=64k --name=a --description="some words here" --filename="a b.dat" --rw=read');
    if (fio) expect(String((await execa('fio', ['--showcmd', job], { cwd })).stdout)).toContain('--description="some words here"');
    // the line runs as printed: a shell gives each value whole
    const again = await execa('sh', ['-c', `${r.stdout.replace('iolab bench iops', 'printf "%s\\n"')}`]);
    expect(String(again.stdout).split('\n')).toEqual(['--size=64k', '--name=a', '--description=some words here', '--filename=a b.dat', '--rw=read']);
  });

  it('json+ gives clat_ns each latency bucket that counted, by fio\'s bucket values, its counts adding up to N', async () => {
    const cwd = place();
    const doc = await json(['--name=b', '--size=256k', '--rw=randread', '--output-format=json+'], cwd);
    const clat = doc.jobs[0].read.clat_ns;
    const counts = Object.values(clat.bins) as number[];
    expect(counts.reduce((a, b) => a + b, 0)).toBe(clat.N);
    // fio's bucket values: exact below 128 ns, else the middle of a bucket 1/64 of its power of two wide
    for (const key of Object.keys(clat.bins).map(Number)) {
      const bits = Math.max(0, Math.floor(Math.log2(key)) - 6);
      expect(key < 128 || (key - 2 ** (bits - 1)) % 2 ** bits === 0, String(key)).toBe(true);
    }
    if (fio) {
      const theirs = JSON.parse(String((await execa('fio', ['--name=b', '--filename=b.0.0', '--size=256k', '--rw=randread',
        '--output-format=json+'], { cwd })).stdout));
      expect(Object.keys(theirs.jobs[0].read.clat_ns).sort()).toEqual(Object.keys(clat).sort());
    }
  });

  it('--minimal and --output-format=terse are refused with the reason, before anything runs', async () => {
    const cwd = place();
    for (const flag of ['--minimal', '--output-format=terse']) {
      const r = await iops([flag, '--name=m', '--size=64k'], cwd);
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toMatch(/^iolab: (--minimal|--output-format=terse): fio's terse lines .* are not written by iolab; --output-format=json/);
    }
    expect(statSync(join(cwd, 'm.0.0'), { throwIfNoEntry: false })).toBeUndefined();
  });

  it('--eta-newline takes fio\'s time', async () => {
    const cwd = place();
    expect((await json(['--eta-newline=2s', '--name=e', '--size=64k'], cwd)).jobs[0].read.total_ios).toBe(16);
    expect((await iops(['--eta-newline=0', '--name=e', '--size=64k'], cwd)).stderr).toMatch(/--eta-newline/);
  });

  it('hipri with io_uring polls for its completions, as fio runs it: a device without poll queues fails the read (EOPNOTSUPP)', async () => {
    const cwd = place();
    writeFileSync(join(cwd, 'h.dat'), Buffer.alloc(256 * 1024, 1));
    const r = await iops(['--name=h', '--filename=h.dat', '--rw=randread', '--ioengine=io_uring', '--hipri', '--direct=1'], cwd);
    // the read ran on a polled ring: where the device polls it succeeds, else it fails as fio's does
    if (r.exitCode !== 0) expect(r.stderr.trim()).toMatch(/^iolab: EOPNOTSUPP: operation not supported, read 'h\.dat' at offset \d+$/);
    else expect(r.stderr).toBe('');
  });

  it('offset= on a user\'s file reads from there to its end, and never grows it; N% is that share of it, as fio', async () => {
    const cwd = place();
    const user = join(cwd, 'user.dat');
    writeFileSync(user, Buffer.alloc(4 << 20, 3));
    const fixed = await json(['--name=o', '--filename=user.dat', '--offset=1m', '--rw=read'], cwd);
    expect(fixed.jobs[0].read.io_bytes).toBe(3 << 20);
    const share = await json(['--name=o', '--filename=user.dat', '--offset=25%', '--rw=read', '--write_iops_log=o', '--log_avg_msec=0',
      '--log_offset=1'], cwd);
    expect(share.jobs[0].read.io_bytes).toBe(3 << 20);
    // the first field is the I/O's time in ms since the job began: whatever the machine's speed; the rest is the I/O
    expect(readFileSync(join(cwd, 'o_iops.1.log'), 'utf8').split('\n')[0].split(', ').slice(1).join(', ')).toBe(`1, 0, 4096, ${1 << 20}, 0`);
    expect(statSync(user).size).toBe(4 << 20);
  });
});

describe.concurrent('fio 3.42\'s options', { timeout: 300_000 }, () => {
  it.runIf(fincore)('uncached reads through the page cache and leaves it as it was (RWF_DONTCACHE); a plain read fills it', async () => {
    const cwd = place();
    const file = join(cwd, 'u.dat');
    await json(['--name=w', '--filename=u.dat', '--size=8m', '--rw=write', '--end_fsync=1'], cwd);
    for (const engine of ['io_uring', 'pvsync2']) {
      await json(['--name=u', '--filename=u.dat', '--size=8m', '--rw=read', `--ioengine=${engine}`, '--uncached=1'], cwd);
      expect(await cachedBytes(file), engine).toBeLessThan(1 << 20);
    }
    await json(['--name=c', '--filename=u.dat', '--size=8m', '--rw=read', '--ioengine=io_uring'], cwd);
    expect(await cachedBytes(file)).toBeGreaterThan(6 << 20);
  });

  it('atomic writes carry RWF_ATOMIC (a file system without torn-write protection refuses them, as under fio 3.42); ' +
    'an engine that cannot is refused by name', async () => {
    const cwd = place();
    const r = await iops(['--name=a', '--filename=a.dat', '--size=64k', '--rw=write', '--ioengine=pvsync2', '--atomic', '--direct=1'], cwd);
    // ext4 and tmpfs here refuse RWF_ATOMIC: the write failed, which a plain write would not
    if (r.exitCode !== 0) expect(r.stderr.trim()).toMatch(/^iolab: (EOPNOTSUPP|EINVAL): .*, pwritev2 'a\.dat' at offset 0$/);
    const psync = await iops(['--name=a', '--filename=a.dat', '--size=64k', '--rw=write', '--atomic'], cwd);
    expect(psync.exitCode).toBe(1);
    expect(psync.stderr).toBe('iolab: atomic: the psync engine issues no atomic writes (fio: "engine does not support atomic writes"); ' +
      'libaio, io_uring and pvsync2 do');
  });

  it('ramp_size: the first bytes are not recorded, and count in the size; with ramp_time refused as fio refuses it', async () => {
    const cwd = place();
    const doc = await json(['--name=r', '--size=4m', '--ramp_size=1m', '--rw=read'], cwd);
    expect(doc.jobs[0].read.io_bytes).toBe(3 << 20);
    const both = await iops(['--name=r', '--size=4m', '--ramp_size=1m', '--ramp_time=1s'], cwd);
    expect(both.stderr).toBe('iolab: ramp_time and ramp_size: one ramp or the other (fio: "job rejected: cannot specify both ramp_time and ramp_size")');
  });

  it('random_distribution=zoned takes the writes\' zones after a comma; zoned_abs zones in bytes (fio 3.42 reads both)', async () => {
    const cwd = place();
    const offsets = (log: string, ddir: number) => readFileSync(join(cwd, log), 'utf8').trim().split('\n').map((l) => l.split(', ').map(Number))
      .filter((l) => l[2] === ddir).map((l) => l[4]);
    await json(['--name=z', '--size=4m', '--rw=randrw', '--number_ios=2000', '--random_distribution=zoned:100/10,100/100',
      '--write_iops_log=z', '--log_avg_msec=0', '--log_offset=1'], cwd);
    expect(Math.max(...offsets('z_iops.1.log', 0))).toBeLessThan((4 << 20) / 10);  // reads: the first 10%
    expect(Math.max(...offsets('z_iops.1.log', 1))).toBeGreaterThan(2 << 20);       // writes: anywhere
    await json(['--name=a', '--filename=z.0.0', '--size=4m', '--rw=randread', '--number_ios=1000',
      '--random_distribution=zoned_abs:60/512k:40/1m', '--write_iops_log=a', '--log_avg_msec=0', '--log_offset=1'], cwd);
    const reads = offsets('a_iops.1.log', 0);
    const first = reads.filter((o) => o < 512 * 1024).length;
    expect(reads.every((o) => o < 1536 * 1024)).toBe(true);
    expect(first).toBeGreaterThan(500);
    expect(first).toBeLessThan(700);
    expect((await iops(['--name=x', '--size=1m', '--random_distribution=zipf:1.2,pareto:0.3'], cwd)).stderr)
      .toMatch(/zoned and zoned_abs take the writes' zones after a comma; fio reads no second zipf/);
  });

  it.runIf(fincore)('file_service_type=zipf draws each I/O\'s file, the hot one most (its pages cached), the job moving its size', async () => {
    const cwd = place();
    const files = ['f0', 'f1', 'f2', 'f3'];
    await json(['--name=lay', `--filename=${files.join(':')}`, '--size=4m', '--rw=write', '--end_fsync=1'], cwd);
    const doc = await json(['--name=z', `--filename=${files.join(':')}`, '--size=4m', '--rw=randread', '--file_service_type=zipf:2'], cwd);
    expect(doc.jobs[0].read.io_bytes).toBe(4 << 20);
    const cached = await Promise.all(files.map((f) => cachedBytes(join(cwd, f))));
    expect(Math.max(...cached)).toBeGreaterThan(3 * Math.min(...cached) + 4096);
  });

  it.runIf(strace)('verify_backlog reads back each 4 blocks written before writing on; the pass after the job checks the rest', async () => {
    const cwd = place();
    const trace = join(cwd, 'trace');
    const cli = await import('./support/cli.js');
    const [cmd, argv] = cli.iolabArgv(['bench', 'iops', '--name=v', '--size=64k', '--rw=write', '--verify', '--verify_backlog=4', '--json']);
    const r = await execa('strace', ['-f', '-e', 'trace=pread64,pwrite64', '-o', trace, cmd, ...argv], { cwd });
    expect(JSON.parse(String(r.stdout)).jobs[0].iolab.verified_blocks).toBe(16);
    // the job's own calls, 4 KiB each: the layout's are 1 MiB writes, the mark's reads are sampled
    const calls = readFileSync(trace, 'utf8').split('\n').filter((l) => /(pread64|pwrite64)\(\d+, .*, 4096, \d+\) = 4096/.test(l))
      .map((l) => (l.includes('pwrite64') ? 'w' : 'r')).join('');
    // (the reads before the first write and after the last: the mark's sampled blocks, the last 4 checked after the job)
    expect(calls.slice(calls.indexOf('w'))).toMatch(/^(wwwwrrrr){3}wwwwr+$/);
  });

  it('verify with rw=write:N, N a multiple of bs, checks each block it wrote, as fio\'s cross-stripe example does', async () => {
    const cwd = place();
    const doc = await json(['--name=h', '--size=1m', '--bs=16k', '--rw=write:112k', '--verify=crc32c'], cwd);
    // 64 writes over the 8 blocks one in each 128k, again and again, as fio's; fio reads those 8 back too
    expect([doc.jobs[0].write.total_ios, doc.jobs[0].iolab.verified_blocks]).toEqual([64, 8]);
    expect((await iops(['--name=h', '--size=1m', '--bs=16k', '--rw=write:8k', '--verify'], cwd)).stderr)
      .toMatch(/--verify with an offset modifier \(rw=write:8192\) that is not a multiple of bs 16384/);
  });

  it('dedupe_percentage repeats that share of the buffers, working_set and dedupe_global among jobs; buffer_compress_percentage ' +
    'zeros that share of each chunk: the written files show it, as fio\'s do', async () => {
    const cwd = place();
    /** The share of 4 KiB blocks of the files that repeat one seen before, and of bytes that are zeros. */
    const measure = (files: string[]) => {
      const seen = new Set<string>();
      let blocks = 0;
      let dups = 0;
      let zeros = 0;
      let bytes = 0;
      for (const f of files) {
        const b = readFileSync(join(cwd, f));
        for (let i = 0; i < b.length; i += 4096, blocks++) {
          const key = b.subarray(i, i + 4096).toString('base64');
          if (seen.has(key)) dups++;
          else seen.add(key);
        }
        for (const x of b) if (x === 0) zeros++;
        bytes += b.length;
      }
      return { dups: dups / blocks, zeros: zeros / bytes };
    };
    const job = ['--size=4m', '--rw=write', '--dedupe_percentage=40', '--buffer_compress_percentage=30'];
    await json(['--name=r', '--filename=r.dat', ...job], cwd);
    const repeat = measure(['r.dat']);
    expect(repeat.dups).toBeGreaterThan(0.33);
    expect(repeat.dups).toBeLessThan(0.47);
    expect(repeat.zeros).toBeGreaterThan(0.28);
    expect(repeat.zeros).toBeLessThan(0.32);
    // two jobs sharing a working set: together they repeat more than either alone (fio's dedupe-global example)
    await json(['--dedupe_mode=working_set', '--dedupe_working_set_percentage=50', '--dedupe_global=1', '--size=4m', '--rw=write',
      '--dedupe_percentage=50', '--name=a', '--filename=a.dat', '--name=b', '--filename=b.dat'], cwd);
    const [a, both] = [measure(['a.dat']), measure(['a.dat', 'b.dat'])];
    expect(a.dups).toBeGreaterThan(0.2);
    expect(both.dups).toBeGreaterThan(a.dups + 0.05);
    if (fio) {
      await execa('fio', ['--name=f', '--filename=f.dat', ...job, '--output-format=json'], { cwd });
      const theirs = measure(['f.dat']);
      expect(Math.abs(theirs.dups - repeat.dups)).toBeLessThan(0.08);
      expect(Math.abs(theirs.zeros - repeat.zeros)).toBeLessThan(0.05);
    }
  });

  it.runIf(strace)('io_submit_mode=offload runs the I/Os on iodepth submit threads, not the job\'s own; rate_process=poisson paces them', async () => {
    const cwd = place();
    const trace = join(cwd, 'trace');
    const cli = await import('./support/cli.js');
    const [cmd, argv] = cli.iolabArgv(['bench', 'iops', '--name=o', '--size=256k', '--rw=randread', '--iodepth=4',
      '--io_submit_mode=offload', '--rate_iops=2000', '--rate_process=poisson', '--json']);
    const r = await execa('strace', ['-f', '-e', 'trace=pread64', '-o', trace, cmd, ...argv], { cwd });
    expect(JSON.parse(String(r.stdout)).jobs[0].read.total_ios).toBe(64);
    const threads = new Set(readFileSync(trace, 'utf8').split('\n').filter((l) => /pread64\(\d+, .*, 4096, \d+\) = 4096/.test(l))
      .map((l) => l.split(' ')[0]));
    expect(threads.size).toBeGreaterThanOrEqual(2);  // the mark's reads are the job thread's; the I/Os the submit threads'
  });

  it.runIf(strace)('end_syncfs syncs the file system once a job that wrote is done', async () => {
    const cwd = place();
    const trace = join(cwd, 'trace');
    const cli = await import('./support/cli.js');
    const [cmd, argv] = cli.iolabArgv(['bench', 'iops', '--name=s', '--size=64k', '--rw=write', '--end_syncfs=1']);
    await execa('strace', ['-f', '-e', 'trace=syncfs', '-o', trace, cmd, ...argv], { cwd });
    expect(readFileSync(trace, 'utf8').match(/syncfs\(\d+\)\s+= 0/g)).toHaveLength(1);
  });
});
