// The installed command: `iolab --version`, `iolab tour`, a one-second `iolab bench iops`, and
// an engine only the tests use refused as unknown.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export async function checks({ root, project, iolab, check }) {
  const v = iolab(['--version']);
  check('npx iolab --version', v.status === 0 && v.out.trim() === JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version, v.out);
  const tour = iolab(['tour'], 120_000);
  check('npx iolab tour', tour.status === 0 && /tour done: .* temp folder removed/.test(tour.out), tour.out);
  const bench = iolab(['bench', 'iops', '--filename', join(project, 'job.dat'), '--size', '8m', '--ioengine', 'io_uring', '--runtime', '1', '--time_based'], 60_000);
  check('a one-second npx iolab bench iops', bench.status === 0 && /io_uring\s+[\d,]+/.test(bench.out), bench.out);
  for (const engine of ['test_delay', 'test_nodata']) {
    const r = iolab(['bench', 'iops', '--filename', join(project, 'job.dat'), '--size', '1m', '--ioengine', engine, '--number_ios', '1']);
    check(`bench iops --ioengine ${engine}: unknown (the tests' engine is not in the package)`,
      r.status !== 0 && r.stderr.startsWith('iolab: ') && r.stderr.includes(`unknown ioengine '${engine}'`), r.out);
  }
}
