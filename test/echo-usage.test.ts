// echo server and echo bench as a user meets their edges: an option the chosen engine has no use
// for, and a server that goes away in the middle of a run.
import { describe, expect, it } from 'vitest';
import { runCli, runCliText } from './support/cli.js';
import { establishedTo, startEchoServerCli, waitFor } from './support/echo.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-eusage-');

describe('echo server --buffers', () => {
  it('is refused for an engine without a buffer pool, in one line, before listening', async () => {
    for (const engine of ['epoll', 'node', 'ring', 'duplex']) {
      // a timeout so that a server which ignores the option and listens does not hang the test
      const r = await runCliText(['echo', 'server', '--engine', engine, '--port', '0', '--buffers', '16'], { timeout: 20_000 });
      expect(r).toEqual({ exitCode: 1, stdout: '',
        stderr: `iolab: --buffers sizes the io_uring server's buffer pool (--engine uring); --engine ${engine} has none` });
    }
  });
});

describe('echo bench against a server killed mid-run', () => {
  it('prints what it measured marked partial, and one iolab: line saying it stopped early', async () => {
    const { child, port } = await startEchoServerCli('epoll');
    try {
      const bench = runCli(['echo', 'bench', '-a', `127.0.0.1:${port}`, '-c', '4', '-t', '30', '--threads', '2']);
      await waitFor(() => establishedTo(port) >= 4, 20_000, 'the generator connected');
      await new Promise((r) => setTimeout(r, 300)); // requests flowing, not only connects
      child.kill('SIGKILL');
      const r = await bench;
      expect(r.exitCode).toBe(1);
      const stderr = String(r.stderr);
      expect(stderr).toMatch(new RegExp(`^iolab: echo bench stopped early: every connection to 127\\.0\\.0\\.1:${port} was lost after ` +
        '\\d+\\.\\d\\d of 30 s \\(see Errors\\); the figures above are partial$'));
      const stdout = String(r.stdout);
      expect(stdout).toMatch(/^Errors: [1-9]\d* /m);
      expect(stdout.trimEnd().split('\n').at(-1)).toMatch(/^Stopped early after \d+\.\d\d of 30 sec: every connection was lost; partial, the speed is over the time it ran$/);
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);
});

checkLeaksAfterAll(tmp);
