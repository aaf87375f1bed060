// bench api stopped by signals as users stop it: `timeout` signals iolab and then its whole
// process group (two SIGTERMs, the peers get one too), a user presses Ctrl-C twice. Two signals
// still leave nothing: the temp data of the read group and the channel group's zeromq socket
// are removed, the peers end, the finished rounds print as partial, exit 130. A third signal or
// SIGKILL may skip that, and then the next run removes what was left and says so.
import { describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { iolabArgv } from './support/cli.js';
import { projectRoot } from '../src/native.js';
import { shortTempDir } from './support/temp.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { newProcessTag, processesTagged, processTagVariable, waitFor } from './support/procs.js';

const tmp = shortTempDir('iolab-api-sig-');
checkLeaksAfterAll(tmp);

let folders = 0;
/** A TMPDIR of the test's own: what bench api leaves there is this run's alone. */
function ownTmpdir(): string {
  const path = join(tmp.path, `t${folders++}`);
  mkdirSync(path);
  return path;
}

const leftovers = (tmpdir: string) => readdirSync(tmpdir).filter((n) => n.startsWith('iolab-')).sort();

/** bench api's read and channel groups (temp data and a zeromq socket), in a process group of
 * its own as under `timeout`, once its channel round 1 has finished. */
async function startedInChannelRound(tmpdir: string, tag: string): Promise<{ child: ResultPromise }> {
  const [file, argv] = iolabArgv(['bench', 'api', '--groups', 'read,channel', '--rounds', '200', '--duration', '10ms', '--size', '1m',
    '--only', 'fs.readvSync,channel/64,zeromq/64,net.unix/64']);
  const child = execa(file, argv, { reject: false, detached: true, env: { TMPDIR: tmpdir, [processTagVariable]: tag } });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await waitFor('channel round 1', () => stderr.includes('channel round 1/200 done'), 60_000);
  return { child }; // not the child itself: an async function would wait for its end

}

describe('bench api stopped by two signals', () => {
  it.each([
    ['SIGTERM to iolab and then to its process group, as timeout sends them', 'SIGTERM', [false, true]],
    ['Ctrl-C twice (SIGINT to the process group, twice)', 'SIGINT', [true, true]],
  ] as const)('%s: partial, exit 130, its temp data and zeromq socket removed, its peers gone', async (_, signal, toGroup) => {
    const tmpdir = ownTmpdir();
    const tag = newProcessTag();
    const { child } = await startedInChannelRound(tmpdir, tag);
    const made = leftovers(tmpdir);
    expect(made.some((n) => new RegExp(`^iolab-bench-api-${child.pid}-`).test(n)), made.join(', ')).toBe(true);
    for (const group of toGroup) process.kill(group ? -child.pid! : child.pid!, signal);
    const run = await child;
    expect(run.exitCode, String(run.stderr)).toBe(130);
    expect(String(run.stdout)).toMatch(new RegExp(`^partial: interrupted by ${signal}; the rows hold the rounds that finished$`, 'm'));
    expect(String(run.stderr)).not.toMatch(/^iolab:/m);
    expect(leftovers(tmpdir)).toEqual([]);
    expect(processesTagged(tag)).toEqual([]);
  }, 120_000);

  /** A short read-group run in tmpdir: what it says on stderr before its progress. */
  async function nextRun(tmpdir: string): Promise<string[]> {
    const [file, argv] = iolabArgv(['bench', 'api', '--groups', 'read', '--rounds', '1', '--duration', '5ms', '--size', '256k', '--only', 'fs.read']);
    const next = await execa(file, argv, { reject: false, env: { TMPDIR: tmpdir } });
    expect(next.exitCode, String(next.stderr)).toBe(0);
    return String(next.stderr).split('\n').filter((l) => l.startsWith('note:'));
  }

  it('SIGKILL may leave them; the next run removes them and says so', async () => {
    const tmpdir = ownTmpdir();
    const tag = newProcessTag();
    const { child: killed } = await startedInChannelRound(tmpdir, tag);
    killed.kill('SIGKILL');
    await killed;
    const left = leftovers(tmpdir);
    expect(left.some((n) => n.startsWith(`iolab-bench-api-${killed.pid}-`)), left.join(', ')).toBe(true);
    const notes = await nextRun(tmpdir);
    expect(notes.sort()).toEqual(left.map((name) => `note: removed ${name.endsWith('.sock') ? 'the zeromq socket' : 'the temp folder'} ` +
      `'${join(tmpdir, name)}', left by a bench api run that was killed (pid ${killed.pid})`).sort());
    expect(leftovers(tmpdir)).toEqual([]);
    await waitFor('the killed run\'s peers to end', () => processesTagged(tag).length === 0 || undefined, 10_000);
  }, 120_000);
});

/** test/fixtures/interrupt-stages.mjs, sent a first signal and then `second`, each once the one
 * before it was seen: the child and what it printed so far. */
async function twiceSignalled(second: NodeJS.Signals) {
  const child = execa(process.execPath, [join(projectRoot, 'test/fixtures/interrupt-stages.mjs')], { reject: false, stdin: 'pipe' });
  const said = { out: '', err: '' };
  child.stdout?.on('data', (chunk: Buffer) => (said.out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (said.err += chunk.toString()));
  await waitFor('ready', () => said.out.includes('ready\n'));
  child.kill('SIGINT');
  await waitFor('the first signal to stop the run', () => said.out.includes('stopping\n'));
  child.kill(second);
  await waitFor('the second signal said', () => said.err.includes('\n'));
  return { child, said };
}

const again = (signal: string) => `note: ${signal} again: still stopping and removing what this run made; a third signal ends iolab at once\n`;

describe('the interrupt rule, every command\'s (src/interrupt.ts)', () => {
  it('the first signal stops the run, the second is said and changes nothing, the third ends it at once (130)', async () => {
    const { child, said } = await twiceSignalled('SIGTERM');
    expect(said.err).toBe(again('SIGTERM'));
    expect(child.exitCode).toBe(null); // still cleaning up
    child.kill('SIGINT');
    const r = await child;
    expect(r.exitCode).toBe(130);
    expect(said.out).toBe('ready\nstopping\n'); // its cleanup cut short
  });

  it('two signals: the cleanup runs to its end', async () => {
    const { child, said } = await twiceSignalled('SIGINT');
    child.stdin?.end();
    const r = await child;
    expect(r.exitCode).toBe(130);
    expect(said.err).toBe(again('SIGINT'));
    expect(said.out).toBe('ready\nstopping\ncleaned\n');
  });
});
