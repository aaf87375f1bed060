// `iolab handoff`: an http server that restarts with no request lost, its listening socket passed
// to the successor over a Unix socket with SCM_RIGHTS. Under wrk (an HTTP load generator in C
// that iolab did not write), 3 restarts: every request answered and no connection error, on the
// Ring and on plain node:http doing the same steps; printed beside node:cluster's
// worker-by-worker restart and a plain close-and-listen-again. Also its output, its errors and
// Ctrl-C. The work is bounded by events (each restart done, each old process gone), not time.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { processIsAlive } from '../src/procfs.js';
import { cliPath, runCliText } from './support/cli.js';
import { answer, fixture, indexUrl, startJsonChild, type JsonChild } from './support/http-servers.js';
import { processesTagged, processTagVariable, newProcessTag, waitFor } from './support/procs.js';
import { checkLeaksAfterAll } from './support/leaks.js';
import { shortTempDir } from './support/temp.js';

const tmp = shortTempDir('iolab-handoff-');
checkLeaksAfterAll(tmp);

interface WrkCounts { requests: number; connect: number; read: number; write: number; status: number; timeout: number }

/** Whether process pid has a handler for SIGINT (its /proc status's SigCgt; true once it is gone). */
function catchesSigint(pid: number): boolean {
  try {
    const caught = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return caught === null || (BigInt(`0x${caught[1]}`) & 2n) !== 0n;
  } catch {
    return true;
  }
}

/** wrk on port until stop(): its requests, and its errors by kind (status: answers not 2xx/3xx). */
function startWrk(port: number, connections: number): { running: () => Promise<void>; stop: () => Promise<WrkCounts> } {
  const script = join(tmp.path, 'count.lua');
  writeFileSync(script, `done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\\n',
    summary.requests, e.connect, e.read, e.write, e.status, e.timeout))
end
`);
  const wrk = spawn('wrk', ['-t', '1', '-c', String(connections), '-d', '1h', '--timeout', '10s', '-s', script, `http://127.0.0.1:${port}/`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  wrk.stdout.on('data', (d: Buffer) => (out += d));
  wrk.stderr.on('data', (d: Buffer) => (err += d));
  const exited = new Promise((resolve) => wrk.once('exit', resolve));
  // wrk's handler for SIGINT is put in place once it has connected to the address once (else it
  // exits: "unable to connect") and started its threads
  const running = async () => {
    while (wrk.exitCode === null && !catchesSigint(wrk.pid!)) await new Promise((r) => setTimeout(r, 5));
  };
  return {
    running,
    stop: async () => {
      // wrk ends on SIGINT and prints what it measured once its handler is in place; a SIGINT
      // before that (a way that restarts fast, on a loaded machine) kills it with nothing printed
      await running();
      wrk.kill('SIGINT');
      await exited;
      const line = out.split('\n').find((l) => l.startsWith('{"requests"'));
      // how it ended says whether it was gone before the SIGINT (a crash: a signal of its own)
      if (line === undefined) throw new Error(`wrk printed no results (exit ${wrk.exitCode}, signal ${wrk.signalCode}): ${out}${err}`);
      return JSON.parse(line) as WrkCounts;
    },
  };
}

const CONNECTIONS = 32;
const RESTARTS = 3;
const results: Record<string, WrkCounts> = {};

/** The ways of restarting measured, each: start (resolves with the port), restart once, stop. */
interface Way { start(): Promise<number>; restart(): Promise<void>; stop(): Promise<void> }

function handoffWay(server: 'ring' | 'node'): Way {
  const tag = newProcessTag();
  let first: JsonChild;
  let current = 0;
  return {
    async start() {
      first = startJsonChild(process.execPath, [cliPath, 'handoff', '--port', '0', '--json', '--server', server, '--drain', '2s'], { env: { [processTagVariable]: tag } });
      const serving = await first.next<{ pid: number; port: number }>('event', (e) => (e as unknown as { event: string }).event === 'serving');
      current = serving.pid;
      return serving.port;
    },
    async restart() {
      const old = current;
      process.kill(old, 'SIGHUP');
      const next = await first.next<{ pid: number; from?: number }>('event', (e) => (e as unknown as { event: string }).event === 'serving' && e.from === old);
      current = next.pid;
      const exited = await first.next<{ pid: number; requests: number }>('event', (e) => (e as unknown as { event: string }).event === 'exited' && e.pid === old);
      expect(exited.requests).toBeGreaterThan(0); // the load reached it
      await waitFor(`pid ${old} gone`, () => !processIsAlive(old));
    },
    async stop() {
      process.kill(current, 'SIGTERM');
      await first.next('event', (e) => (e as unknown as { event: string }).event === 'stopped');
      await waitFor('every generation gone', () => processesTagged(tag).length === 0);
    },
  };
}

/** A fixture that prints its port, restarts on `signal` and says `doneKey` when it did. */
function fixtureWay(args: string[], signal: NodeJS.Signals, doneKey: string): Way {
  let server: JsonChild;
  return {
    async start() {
      server = startJsonChild(process.execPath, args);
      return (await server.next<{ port: number }>('port')).port;
    },
    async restart() {
      server.child.kill(signal);
      await server.next(doneKey);
    },
    async stop() {
      expect(await server.stop()).toBe(0);
    },
  };
}

/** node:cluster's worker-by-worker restart (test/fixtures/http-cluster.mjs, SIGUSR2). */
const clusterWay = (kind: 'ring' | 'node') => fixtureWay([fixture('http-cluster.mjs'), indexUrl, kind, 'rr', '2'], 'SIGUSR2', 'restarted');
/** close() and listen() again in one process (test/fixtures/http-relisten.mjs, SIGHUP). */
const relistenWay = () => fixtureWay([fixture('http-relisten.mjs')], 'SIGHUP', 'relistened');

async function underLoad(way: Way): Promise<WrkCounts> {
  const port = await way.start();
  const wrk = startWrk(port, CONNECTIONS);
  try {
    // the load flows before the first restart: wrk is past its first connect (a restart before
    // it, from a way that restarts fast, made it exit with nothing measured)
    await wrk.running();
    expect((await answer(port)).error).toBeUndefined();
    for (let i = 0; i < RESTARTS; i++) await way.restart();
    expect((await answer(port)).error).toBeUndefined();
  } finally {
    results.last = await wrk.stop();
    await way.stop();
  }
  return results.last;
}

describe(`${RESTARTS} restarts under wrk (${CONNECTIONS} connections)`, () => {
  afterAll(() => {
    const rows = Object.entries(results).filter(([name]) => name !== 'last');
    if (rows.length === 0) return;
    const pad = (s: string | number, n: number) => String(s).padStart(n);
    console.log([`${RESTARTS} restarts under wrk, ${CONNECTIONS} connections: requests answered, and failed requests and connection errors by kind`,
      `${'way'.padEnd(44)}${pad('requests', 10)}${pad('connect', 9)}${pad('read', 7)}${pad('write', 7)}${pad('status', 8)}${pad('timeout', 9)}`,
      ...rows.map(([name, r]) => `${name.padEnd(44)}${pad(r.requests, 10)}${pad(r.connect, 9)}${pad(r.read, 7)}${pad(r.write, 7)}${pad(r.status, 8)}${pad(r.timeout, 9)}`)].join('\n'));
  });

  it.each(['ring', 'node'] as const)('iolab handoff (%s): every request answered, no connection error', async (server) => {
    const r = await underLoad(handoffWay(server));
    results[`iolab handoff, ${server === 'ring' ? 'onRing' : 'node:http'}`] = r;
    expect(r.requests).toBeGreaterThan(0);
    expect({ connect: r.connect, read: r.read, write: r.write, status: r.status, timeout: r.timeout }).toEqual({ connect: 0, read: 0, write: 0, status: 0, timeout: 0 });
  }, 120_000);

  it.each(['node', 'ring'] as const)("node:cluster's worker-by-worker restart (%s), for comparison", async (kind) => {
    const r = await underLoad(clusterWay(kind));
    results[`node:cluster worker by worker, ${kind === 'ring' ? 'onRing' : 'node:http'}`] = r;
    expect(r.requests).toBeGreaterThan(0);
  }, 120_000);

  it('close() and listen() again in one process (node:http), for comparison', async () => {
    const r = await underLoad(relistenWay());
    results['close and listen again, node:http'] = r;
    expect(r.requests).toBeGreaterThan(0);
  }, 120_000);
});

describe('iolab handoff: its output and errors', () => {
  it('prints where it serves and what each step did; SIGTERM stops it: partial, exit 130', async () => {
    const server = startJsonChild(process.execPath, [cliPath, 'handoff', '--port', '0']);
    const text: string[] = [];
    server.child.stdout!.on('data', (d: Buffer) => text.push(String(d)));
    await waitFor('its first line', () => /serving/.test(text.join('')));
    const port = Number(/127\.0\.0\.1:(\d+)/.exec(text.join(''))![1]);
    expect(await answer(port)).toEqual({ body: `hello from pid ${server.child.pid}\n` });
    expect(await server.stop()).toBe(130);
    expect(text.join('')).toBe(`pid ${server.child.pid}: serving http://127.0.0.1:${port}/ on the Ring (onRing); kill -HUP ${server.child.pid} restarts it with no request lost, kill ${server.child.pid} stops it\n` +
      `pid ${server.child.pid}: stopped by SIGTERM after 1 request(s) (partial)\n`);
  });

  it('a port in use, and --take-over without a predecessor: one line each, exit 1', async () => {
    const holder = net.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => holder.once('listening', r));
    const { port } = holder.address() as net.AddressInfo;
    expect(await runCliText(['handoff', '--port', String(port)])).toEqual({ exitCode: 1, stdout: '', stderr: `iolab: listen EADDRINUSE: address already in use 127.0.0.1:${port}` });
    holder.close();
    const r = await runCliText(['handoff', '--take-over']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/^iolab: --take-over: fd 3 is not the Unix socket a predecessor sends the listening socket over \(.*\); iolab handoff starts its successor with it$/);
  });
});
