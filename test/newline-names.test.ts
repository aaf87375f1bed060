// A file name with a newline in it is shown as \n, as writev and readv show it, wherever iolab
// names the file: gen, the bench iops and bench latency headers, --output's "written:" line,
// report, fdpass; every output line stays one line. And fdpass recv refuses a --timeout it
// cannot keep before it listens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { runCliText, startCli } from './support/cli.js';
import { shortTempDir } from './support/temp.js';

let dir: { path: string; cleanup: () => void };
beforeAll(() => { dir = shortTempDir('iolab-nl-'); });
afterAll(() => dir.cleanup());

const at = (name: string) => join(dir.path, name);
const shown = (path: string) => path.replace(/\n/g, '\\n');

describe('a newline in a file name', () => {
  it('gen and bench latency', async () => {
    const infile = at('in\nput.txt');
    const gen = await runCliText(['gen', infile, '--size', '16k']);
    expect(gen.stdout).toBe(`wrote 16384 bytes of random printable text to ${shown(infile)}`);
    const outfile = at('out\nput.dat');
    const results = at('lat\n.json');
    const r = await runCliText(['bench', 'latency', '--engine', 'sync', '--count', '4', '--no-direct', '--infile', infile,
      '--outfile', outfile, '--output', results]);
    expect(r.exitCode).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(new RegExp(`^iolab bench latency: 4 reads of ${escape(shown(infile))}, 4 writes to ${escape(shown(outfile))}, `));
    expect(lines.at(-1)).toBe(`written: ${shown(results)}`);
  });

  it('bench iops', async () => {
    const file = at('da\nta.dat');
    const r = await runCliText(['bench', 'iops', '--filename', file, '--size', '1m', '--rw', 'randread', '--ioengine', 'psync', '--runtime', '100ms']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(new RegExp(`file=${escape(shown(file))}$`));
  });

  it('report', async () => {
    const input = at('api\n.json');
    expect((await runCliText(['bench', 'api', '--groups', 'read', '--only', 'iolab.readvSync', '--rounds', '1', '--duration', '5ms',
      '--size', '64k', '--output', input])).exitCode).toBe(0);
    const page = at('pa\nge.html');
    const r = await runCliText(['report', input, '-o', page], { timeout: 120_000 });
    expect(r.stdout).toBe(`wrote ${shown(page)}: 1 chart(s) from 1 file(s)`);
    const twice = await runCliText(['report', input, input, '-o', at('twice.html')]);
    expect(twice.stderr).toBe(`iolab: ${shown(input)}: given twice; name each file once`);
  }, 120_000);

  it('fdpass recv and send', async () => {
    const socket = at('s\nk');
    const { child, firstLine } = await startCli(['fdpass', 'recv', '--socket', socket], /listening/);
    try {
      expect(firstLine).toBe(`listening on ${shown(socket)}`);
      const sent = await runCliText(['fdpass', 'send', '--socket', socket]);
      expect(sent.stdout.split('\n')).toHaveLength(1);
      expect(sent.stdout).toMatch(new RegExp(`^sent to ${escape(shown(socket))}: `));
    } finally {
      await child;
    }
  });
});

describe('fdpass recv --timeout', () => {
  it('less than a millisecond is refused before listening', async () => {
    const r = await runCliText(['fdpass', 'recv', '--socket', at('t.sock'), '--timeout', '500us']);
    expect(r).toEqual({ exitCode: 1, stdout: '', stderr: "iolab: option '--timeout <time>' argument '500us' is invalid. expected a whole number of milliseconds (1ms or more), got '500us'" });
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
