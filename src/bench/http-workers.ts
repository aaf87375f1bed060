// bench http --workers: the same node:http handler served by N processes. `node-cluster` is
// node:http under node:cluster, `ring-cluster` the same server with onRing (node:cluster's
// scheduling as the environment sets it: round-robin by default, NODE_CLUSTER_SCHED_POLICY=none
// the kernel's), `ring-reuseport` onRing in each worker with listen({ reusePort: true }) (a
// socket per worker, the kernel spreads connections by their addresses). The hidden `bench http
// serve --processes N` is the cluster's primary: it prints {"listening":true,"port","workers"}
// once every worker listens, answers each "counts" line on stdin with each worker's
// connections and requests so far, and on SIGTERM ends its workers and exits.
import cluster, { type Worker } from 'node:cluster';
import http from 'node:http';
import { createInterface } from 'node:readline';
import { onRing } from '../ring/server.js';
import { handler } from './http-handler.js';

export const workerServerNames = ['node-cluster', 'ring-cluster', 'ring-reuseport'] as const;
export type WorkerServerName = (typeof workerServerNames)[number];

export interface WorkerCounts { pid: number; connections: number; requests: number }

type ToPrimary = { listening: number } | { counts: { connections: number; requests: number } } | { failed: string };

/** One worker: the server, counting its connections and requests for the primary. */
function runWorker(name: WorkerServerName, host: string): void {
  let connections = 0;
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    handler(req, res);
  });
  server.keepAliveTimeout = 60_000; // the load generator's connections stay for the whole run
  server.on('connection', () => connections++);
  if (name !== 'node-cluster') onRing(server);
  const send = (m: ToPrimary) => process.send!(m);
  server.once('error', (err) => send({ failed: err.message }));
  const port = Number(process.env.IOLAB_BENCH_PORT ?? 0);
  const listening = () => send({ listening: (server.address() as { port: number }).port });
  if (name === 'ring-reuseport') server.listen({ port, host, reusePort: true }, listening);
  else server.listen(port, host, listening);
  process.on('message', (m) => {
    if (m === 'counts') send({ counts: { connections, requests } });
  });
  process.on('SIGINT', () => {}); // a terminal's Ctrl-C: bench http stops the primary, which stops this
}

function fork(port: number): Worker {
  return cluster.fork({ IOLAB_BENCH_PORT: String(port) });
}

/** The primary: forks the workers (ring-reuseport: the first picks the port, the rest take it). */
async function runPrimary(name: WorkerServerName, count: number): Promise<void> {
  const workers: Worker[] = [];
  let stopping = false;
  const started = (worker: Worker) => new Promise<number>((resolve, reject) => {
    worker.on('message', (m: ToPrimary) => {
      if ('listening' in m) resolve(m.listening);
      if ('failed' in m) reject(new Error(m.failed));
    });
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      process.stderr.write(`iolab: a worker of the ${name} server ended (${signal ?? `status ${code}`})\n`);
      process.exit(1);
    });
  });
  let port = 0;
  for (let i = 0; i < count; i++) {
    const worker = fork(name === 'ring-reuseport' ? port : 0);
    workers.push(worker);
    port = await started(worker);
  }
  process.stdout.write(`${JSON.stringify({ listening: true, port, workers: workers.map((w) => w.process.pid) })}\n`);
  const lines = createInterface({ input: process.stdin });
  lines.on('line', async (line) => {
    if (line.trim() !== 'counts') return;
    const counts = await Promise.all(workers.map((w) => new Promise<WorkerCounts>((resolve) => {
      const onMessage = (m: ToPrimary) => {
        if (!('counts' in m)) return;
        w.off('message', onMessage);
        resolve({ pid: w.process.pid!, ...m.counts });
      };
      w.on('message', onMessage);
      w.send('counts');
    })));
    process.stdout.write(`${JSON.stringify({ counts })}\n`);
  });
  process.on('SIGINT', () => {}); // a terminal's Ctrl-C: bench http stops this process in order
  await new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));
  stopping = true;
  await Promise.all(workers.map((w) => new Promise<void>((resolve) => {
    if (w.process.exitCode !== null || w.process.signalCode !== null) return resolve();
    w.once('exit', () => resolve());
    w.process.kill('SIGKILL'); // keep-alive connections of a generator killed mid-run would hold a graceful stop
  })));
  process.exit(0);
}

/** `bench http serve --server <worker server> --processes N`: the primary, or (as node:cluster
 * runs the same command in each worker) a worker. */
export async function serveWorkers(name: WorkerServerName, host: string, count: number): Promise<void> {
  if (cluster.isWorker) runWorker(name, host);
  else await runPrimary(name, count);
}
