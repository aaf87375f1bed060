// The checkout's own iolab, the TypeScript sources run through tsx (`npx tsx src/cli.ts`, and
// scripts/iolab-ts.mjs, which the sources use to start iolab children): the rest of the suite
// runs the compiled dist/cli.js, so this is where the sources' entry points are run as commands.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { join } from 'node:path';
import { projectRoot } from '../src/native.js';
import { iolabArgv as sourcesArgv } from '../src/spawn-iolab.js';
import { runCliText } from './support/cli.js';

const packageVersion = (await import('../package.json', { with: { type: 'json' } })).default.version;

/** What dist/cli.js prints for a demo: the sources must print the same. */
const compiled = async (args: string[]) => {
  const r = await runCliText(args);
  expect(r).toMatchObject({ exitCode: 0, stderr: '' });
  return r.stdout;
};

describe('iolab from the checkout, through tsx', () => {
  it('npx tsx src/cli.ts: --version, and a demo printing what dist/cli.js prints', async () => {
    const version = await execa('npx', ['tsx', 'src/cli.ts', '--version'], { cwd: projectRoot, reject: false });
    expect({ exitCode: version.exitCode, stdout: version.stdout, stderr: version.stderr }).toEqual({ exitCode: 0, stdout: packageVersion, stderr: '' });
    const demo = await execa('npx', ['tsx', 'src/cli.ts', 'readv', 'readv.c'], { cwd: projectRoot, reject: false });
    expect(demo).toMatchObject({ exitCode: 0, stderr: '' });
    expect(demo.stdout).toBe(await compiled(['readv', 'readv.c']));
  });

  it('the launcher the sources start children with runs the sources, not dist/', async () => {
    const [file, argv] = sourcesArgv(['writev', '--help']);
    expect(argv[0]).toBe(join(projectRoot, 'scripts', 'iolab-ts.mjs'));
    const r = await execa(file, argv, { cwd: projectRoot, reject: false });
    expect(r).toMatchObject({ exitCode: 0, stderr: '' });
    expect(r.stdout).toBe(await compiled(['writev', '--help']));
  });
});
