// vega and vega-lite are optional peer dependencies: an installed iolab without them refuses
// `report` in one line naming the command that installs them where this iolab finds them (a
// project, or npm install -g's prefix), before any input is read and with nothing written. The
// installs here are the compiled dist/ copied into a project's and a global prefix's
// node_modules with commander and no vega; npm run test:package does the same with the real
// tarball, then runs the command the line names and a report with them.
import { describe, expect, it } from 'vitest';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { projectRoot } from '../src/native.js';
import { chartLibrariesInstallCommand } from '../src/report/render.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-rlibs-');
checkLeaksAfterAll(tmp);

const peers = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')).peerDependencies as Record<string, string>;
const specs = `vega@${peers.vega} vega-lite@${peers['vega-lite']}`;

/** dist/ and package.json as npm would install them into modules/iolab, commander beside it. */
function installWithoutVega(modules: string): string {
  const pkg = join(modules, 'iolab');
  mkdirSync(pkg, { recursive: true });
  cpSync(join(projectRoot, 'dist'), join(pkg, 'dist'), { recursive: true });
  cpSync(join(projectRoot, 'package.json'), join(pkg, 'package.json'));
  symlinkSync(join(projectRoot, 'node_modules', 'commander'), join(modules, 'commander'));
  return join(pkg, 'dist', 'cli.js');
}

async function report(cli: string, cwd: string) {
  const input = join(cwd, 'in.json');
  writeFileSync(input, '{}');
  const r = await execa(process.execPath, [cli, 'report', input, '-o', join(cwd, 'r.html')], { cwd, reject: false });
  return { exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, written: existsSync(join(cwd, 'r.html')) };
}

describe('report without vega and vega-lite', () => {
  it('in a project: one line with the npm install to run there, nothing written', async () => {
    const project = join(tmp.path, 'my project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), '{"name":"consumer","private":true}');
    const cli = installWithoutVega(join(project, 'node_modules'));
    expect(await report(cli, project)).toEqual({
      exitCode: 1, stdout: '', written: false,
      stderr: `iolab: report draws its charts with vega and vega-lite, which are not installed: cd '${project}' && npm install ${specs}`,
    });
  });

  it('installed with npm install -g: one line with the npm install -g for that prefix', async () => {
    const prefix = join(tmp.path, 'prefix');
    const cli = installWithoutVega(join(prefix, 'lib', 'node_modules'));
    expect(await report(cli, tmp.path)).toEqual({
      exitCode: 1, stdout: '', written: false,
      stderr: `iolab: report draws its charts with vega and vega-lite, which are not installed: npm install -g --prefix ${prefix} ${specs}`,
    });
  });

  it('in a checkout (where npm ci installs them): npm ci', () => {
    expect(chartLibrariesInstallCommand(projectRoot)).toBe(`cd ${projectRoot} && npm ci`);
  });
});
