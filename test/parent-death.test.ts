// A program iolab did not write (fio) runs as iolab's own child, with no shell between: its
// output and exit come back whole (more than a pipe holds), its CPU time is its own (wait4), a
// stop signal reaches it, and it dies when iolab dies, even by SIGKILL (PR_SET_PDEATHSIG, set
// between fork and exec).
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { native, projectRoot } from '../src/native.js';
import { runDyingWithParent } from '../src/parent-death.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { childrenOf, waitFor } from './support/procs.js';
import { shortTempDir } from './support/temp.js';

const dir = shortTempDir('iolab-pdeath-');
checkLeaksAfterAll(dir);

describe('runDyingWithParent', () => {
  it('returns the whole output, the exit code and the CPU time of the program itself', async () => {
    const r = await runDyingWithParent('sh', ['-c', 'head -c 300000 /dev/zero | tr "\\0" x; echo done >&2; exit 3']);
    expect([r.exitCode, r.signal, r.stdout.length, r.stderr]).toEqual([3, null, 300000, 'done\n']);
    const busy = await runDyingWithParent('sh', ['-c', 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done']);
    expect(busy.cpuSec).toBeGreaterThan(0.01);
    await expect(runDyingWithParent('no-such-program-iolab', [])).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('gives the program the default signal dispositions (Node ignores SIGPIPE) and sends SIGINT on stop', async () => {
    const r = await runDyingWithParent('sh', ['-c', 'grep -E "^Sig(Ign|Blk)" /proc/self/status']);
    expect(r.stdout).toMatch(/^SigBlk:\s+0+\nSigIgn:\s+0+\n$/);
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 100);
    const t0 = Date.now();
    const slept = await runDyingWithParent('sleep', ['30'], stop.signal);
    expect([slept.exitCode, slept.signal]).toEqual([null, 'SIGINT']);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('a stop sent the moment the program starts is the program\'s, never its starter\'s', { timeout: 60_000 }, async () => {
    // between fork and exec the child still has Node's handler, which writes to the signal pipe
    // it shares with its starter: a SIGINT caught there reached the starter as a second Ctrl-C
    // (bench http then exited 130 with nothing printed)
    const script = join(dir.path, 'stopper.mjs');
    writeFileSync(script, `import { runDyingWithParent } from ${JSON.stringify(join(projectRoot, 'dist/parent-death.js'))};\n` +
      'let mine = 0; process.on("SIGINT", () => mine++);\n' +
      'const stopped = AbortSignal.abort(); const ends = {};\n' +
      'for (let i = 0; i < 300; i++) { const r = await runDyingWithParent("sleep", ["0.05"], stopped); ends[r.signal ?? r.exitCode] = (ends[r.signal ?? r.exitCode] ?? 0) + 1; }\n' +
      'await new Promise((r) => setTimeout(r, 200));\n' +
      'console.log(JSON.stringify({ mine, ends }));\n');
    const r = await execa(process.execPath, [script]);
    expect(JSON.parse(r.stdout)).toEqual({ mine: 0, ends: { SIGINT: 300 } });
  });

  // SIGTERM: a process group stopped at once; SIGHUP: a terminal that closed, or a reload asked
  it.for(['SIGTERM', 'SIGHUP'])('a %s sent the moment the program starts is the program\'s, never its starter\'s', { timeout: 60_000 }, async (signal) => {
    // every signal stays blocked from fork until the child has reset its handlers (every one of
    // them, from 1: SIGHUP is 1): a signal let through there runs Node's handler in the child,
    // which tells the starter
    const script = join(dir.path, `terminator-${signal}.mjs`);
    writeFileSync(script, `import { closeSync } from 'node:fs';\nimport { native } from ${JSON.stringify(join(projectRoot, 'dist/native.js'))};\n` +
      `const signal = ${JSON.stringify(signal)};\n` +
      'let mine = 0; process.on(signal, () => mine++);\nconst ends = {};\n' +
      'for (let i = 0; i < 300; i++) {\n' +
      '  const child = native.spawnDyingWithParent("sleep", ["0.05"]);\n' +
      '  process.kill(child.pid, signal);\n' +
      '  const s = await native.waitChild(child.pid);\n' +
      '  closeSync(child.stdout); closeSync(child.stderr);\n' +
      '  ends[s.signal ?? s.exitCode] = (ends[s.signal ?? s.exitCode] ?? 0) + 1;\n' +
      '}\n' +
      'await new Promise((r) => setTimeout(r, 200));\n' +
      'console.log(JSON.stringify({ mine, ends }));\n');
    const r = await execa(process.execPath, [script]);
    expect(JSON.parse(r.stdout)).toEqual({ mine: 0, ends: { [signal]: 300 } });
  });

  it("waitChild takes any pid from 1 up (init's too: not this process's child, ECHILD), and refuses 0 and below by range", async () => {
    await expect(native.waitChild(1)).rejects.toMatchObject({ code: 'ECHILD', syscall: 'wait4' });
    expect(() => native.waitChild(0)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native.waitChild(-1)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
  });

  it('the program dies with the process that started it, even by SIGKILL', { timeout: 60_000 }, async () => {
    // a Node process (the compiled package's module) starts `sleep 60` and says its pid
    const script = join(dir.path, 'starter.mjs');
    writeFileSync(script, `import { runDyingWithParent } from ${JSON.stringify(join(projectRoot, 'dist/parent-death.js'))};\n` +
      'runDyingWithParent("sleep", ["60"]);\n');
    const starter = execa(process.execPath, [script], { reject: false });
    // (a child found between fork and exec is still called node)
    const sleeper = await waitFor('sleep under the starter', () => childrenOf(starter.pid as number).find((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sleep';
      } catch {
        return false;
      }
    }), 20_000);
    starter.kill('SIGKILL');
    await starter;
    await waitFor('sleep to die with its parent', () => {
      try {
        return readFileSync(`/proc/${sleeper}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') === true;
      } catch {
        return true;
      }
    }, 2000);
  });
});
