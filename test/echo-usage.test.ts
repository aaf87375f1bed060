// echo server and echo bench as a user meets their edges: an option the chosen server has no use
// for, the old spellings of names, and a server that goes away in the middle of a run.
import { describe, expect, it } from 'vitest';
import { runCli, runCliText, startCli } from './support/cli.js';
import { establishedTo, startEchoServerCli, waitFor } from './support/echo.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-eusage-');

describe('echo server --buffers', () => {
  it('is refused for a server without a buffer pool, in one line, before listening', async () => {
    for (const server of ['epoll', 'node', 'ring', 'duplex']) {
      // a timeout so that a server which ignores the option and listens does not hang the test
      const r = await runCliText(['echo', 'server', '--server', server, '--port', '0', '--buffers', '16'], { timeout: 20_000 });
      expect(r).toEqual({ exitCode: 1, stdout: '',
        stderr: `iolab: --buffers sizes the io_uring server's buffer pool (--server io_uring); --server ${server} has none` });
    }
  });
});

describe('echo server --server: the old spellings still work', () => {
  it('--engine is --server (hidden in the help), and uring is io_uring', async () => {
    const { child, firstLine } = await startCli(['echo', 'server', '--engine', 'uring', '--port', '0', '--json'], /listening/);
    try {
      expect(JSON.parse(firstLine)).toMatchObject({ event: 'listening', server: 'io_uring' });
    } finally {
      child.kill('SIGKILL');
    }
    const help = await runCliText(['echo', 'server', '--help']);
    expect(help.stdout).toContain('--server <name>');
    expect(help.stdout).not.toContain('--engine');
  });

  it('an unknown server, and both spellings at once, are one line each', async () => {
    const r = await runCliText(['echo', 'server', '--server', 'iouring', '--port', '0']);
    expect(r).toEqual({ exitCode: 1, stdout: '',
      stderr: "iolab: option '--server <name>' argument 'iouring' is invalid. unknown server 'iouring' (known: io_uring, epoll, node, ring)" });
    const both = await runCliText(['echo', 'server', '--engine', 'epoll', '--server', 'epoll', '--port', '0']);
    expect(both).toEqual({ exitCode: 1, stdout: '', stderr: 'iolab: --engine is the old name of --server: give one of them' });
  });
});

describe('echo bench --client: the old spelling still works', () => {
  it('--client uring is the io_uring generator', async () => {
    const { child, port } = await startEchoServerCli('epoll');
    try {
      const r = await runCli(['echo', 'bench', '-a', `127.0.0.1:${port}`, '-c', '2', '-t', '1', '--threads', '1', '--client', 'uring', '--json']);
      expect(r.exitCode).toBe(0);
      expect(JSON.parse(String(r.stdout))).toMatchObject({ client: 'io_uring', connected: 2 });
      const bad = await runCliText(['echo', 'bench', '-a', `127.0.0.1:${port}`, '--client', 'uringg']);
      expect(bad).toEqual({ exitCode: 1, stdout: '',
        stderr: "iolab: option '--client <kind>' argument 'uringg' is invalid. unknown generator 'uringg' (known: epoll, threads, io_uring)" });
    } finally {
      child.kill('SIGKILL');
    }
  }, 30_000);
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
