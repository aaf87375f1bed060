// echo server and echo bench as a user meets their edges: an option the chosen engine has no use
// for, and a server that goes away in the middle of a run.
import { describe, expect, it } from 'vitest';
import { runCliText } from './support/cli.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-eusage-');

describe('echo server --buffers', () => {
  it('is refused for an engine without a buffer pool, in one line, before listening', async () => {
    for (const engine of ['epoll', 'node', 'ring']) {
      // a timeout so that a server which ignores the option and listens does not hang the test
      const r = await runCliText(['echo', 'server', '--engine', engine, '--port', '0', '--buffers', '16'], { timeout: 20_000 });
      expect(r).toEqual({ exitCode: 1, stdout: '',
        stderr: `iolab: --buffers sizes the io_uring server's buffer pool (--engine uring); --engine ${engine} has none` });
    }
  });
});

checkLeaksAfterAll(tmp);
