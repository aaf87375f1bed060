// The storage benchmark's files as a user names them: an existing file iolab did not create keeps
// its size (--force lets a job write into it, not grow it).
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-bpaths-');
const at = (name: string) => join(tmp.path, name);

describe('an existing file iolab did not create', () => {
  it('keeps its size under --force (no --size: its own, as fio takes it); --size says otherwise', async () => {
    const f = at('foreign.dat');
    writeFileSync(f, randomBytes(1 << 20));
    const r = await runCliText(['bench', 'iops', '--filename', f, '--rw', 'randwrite', '--number_ios', '10', '--ioengine', 'psync', '--force']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(statSync(f).size).toBe(1 << 20);
    const grown = await runCliText(['bench', 'iops', '--filename', f, '--rw', 'randwrite', '--number_ios', '10', '--ioengine', 'psync',
      '--force', '--size', '2m']);
    expect(grown.exitCode).toBe(0);
    expect(statSync(f).size).toBe(2 << 20);
  });
});

checkLeaksAfterAll(tmp);
