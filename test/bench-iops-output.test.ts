// bench iops' results file takes the format asked for, as fio's --output does: the JSON with
// --json or --output-format=json, the text report with --output-format=normal (printed as well).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliText } from './support/cli.js';
import { shortTempDir } from './support/temp.js';

let dir: { path: string; cleanup: () => void };
beforeAll(() => { dir = shortTempDir('iolab-iops-out-'); });
afterAll(() => dir.cleanup());

const job = (name: string) => [`--name=${name}`, `--filename=${join(dir.path, `${name}.dat`)}`, '--size=1m', '--rw=randread',
  '--ioengine=psync', '--runtime=100ms', '--time_based'];

describe('bench iops --output', () => {
  it('--output-format=normal --output=res.txt writes the text report there', async () => {
    const res = join(dir.path, 'res.txt');
    const r = await runCliText(['bench', 'iops', ...job('normal'), '--output-format=normal', `--output=${res}`]);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const text = readFileSync(res, 'utf8');
    expect(text).toMatch(/^iolab bench iops: normal: randread bs=4096 /);
    expect(text).not.toContain('{');
    expect(r.stdout).toBe(text.trimEnd());
  });

  it('--output-format=json --output=res.json writes the JSON', async () => {
    const res = join(dir.path, 'res.json');
    const r = await runCliText(['bench', 'iops', ...job('json'), '--output-format=json', `--output=${res}`]);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(readFileSync(res, 'utf8')).jobs[0].jobname).toBe('json');
  });
});
