// bench http's servers: one node:http handler ("hello world", as the usual HTTP benchmarks
// answer) served by node's own server and by the same server on the Ring (onRing, the one line a
// user changes), and fastify on each where fastify is installed (a dev dependency: through its
// documented serverFactory). Each runs in a child process of its own (the hidden `bench http
// serve`), so its CPU is its own in /proc.
import { Command } from 'commander';
import http from 'node:http';
import { createRequire } from 'node:module';
import { UserError } from '../cli-util.js';
import { numberOption } from '../numbers.js';
import { dieWithParentIfAsked } from '../parent-death.js';
import { onRing } from '../ring/server.js';
import { BODY, handler } from './http-handler.js';
import { serveWorkers, workerServerNames, type WorkerServerName } from './http-workers.js';

export const httpServerNames = ['node', 'ring', 'fastify', 'fastify-ring'] as const;
export type HttpServerName = (typeof httpServerNames)[number];

interface FastifyApp {
  get(path: string, handler: () => unknown): void;
  listen(options: { port: number; host: string }): Promise<string>;
  server: http.Server;
  close(): Promise<void>;
}
type FastifyFactory = (options: { serverFactory?: (h: http.RequestListener) => http.Server; logger?: boolean }) => FastifyApp;

/** fastify, where it is installed (beside iolab or in the checkout). */
export function loadFastify(): FastifyFactory | undefined {
  try {
    const found = createRequire(import.meta.url)('fastify') as FastifyFactory | { default: FastifyFactory };
    return typeof found === 'function' ? found : found.default;
  } catch {
    return undefined;
  }
}

/** Listens on host:port (0: any); resolves with the port and a close(). */
export async function startHttpServer(name: HttpServerName, host: string, port: number): Promise<{ port: number; close: () => Promise<void> }> {
  if (name === 'node' || name === 'ring') {
    const server = name === 'ring' ? onRing(http.createServer(handler)) : http.createServer(handler);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, resolve);
    });
    server.keepAliveTimeout = 60_000; // the load generator's connections stay for the whole run
    return { port: (server.address() as { port: number }).port, close: () => new Promise((r) => server.close(() => r())) };
  }
  const fastify = loadFastify();
  if (fastify === undefined) throw new UserError(`the ${name} server needs fastify: npm install fastify`);
  const app = fastify(name === 'fastify-ring' ? { serverFactory: (h) => onRing(http.createServer(h)) } : {});
  app.get('/', () => BODY);
  await app.listen({ port, host });
  app.server.keepAliveTimeout = 60_000;
  return { port: (app.server.address() as { port: number }).port, close: () => app.close() };
}

/** The hidden `bench http serve`: prints {"listening":true,"port":N}, serves until SIGTERM;
 * with --processes, one of the servers of N processes (http-workers.ts). */
export function serveCommand(): Command {
  const names = [...httpServerNames, ...workerServerNames];
  return new Command('serve')
    .description('one of bench http\'s servers (started by bench http itself)')
    .requiredOption('--server <name>', names.join(', '))
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0: any free one)', numberOption({ min: 0, max: 65535 }), 0)
    .option('--processes <n>', 'processes of a server of workers (bench http --workers)', numberOption({ min: 1 }), 1)
    .action(async (opts: { server: string; host: string; port: number; processes: number }) => {
      dieWithParentIfAsked();
      if (!(names as readonly string[]).includes(opts.server)) throw new UserError(`--server: expected one of ${names.join(', ')}, got '${opts.server}'`);
      if ((workerServerNames as readonly string[]).includes(opts.server)) return serveWorkers(opts.server as WorkerServerName, opts.host, opts.processes);
      const server = await startHttpServer(opts.server as HttpServerName, opts.host, opts.port);
      process.stdout.write(`${JSON.stringify({ listening: true, port: server.port })}\n`);
      process.on('SIGINT', () => {}); // a terminal's Ctrl-C: bench http stops this process in order
      await new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));
      await server.close();
      process.exit(0); // keep-alive connections of a generator killed mid-run would hold the loop
    });
}
