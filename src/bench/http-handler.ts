// The one node:http handler every bench http server answers with ("hello world", as the usual
// HTTP benchmarks answer), below the servers of one process and of several.
import type http from 'node:http';

export const BODY = 'hello world';

export const handler = (_req: http.IncomingMessage, res: http.ServerResponse): void => {
  res.setHeader('Content-Type', 'text/plain');
  res.end(BODY);
};
