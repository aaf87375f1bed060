// The answers of node:cluster's primary that a Linux primary does not give, which onRing's
// worker-side listen turns into net's errors all the same (net's checkBindError): a socket bound
// to another port than asked (a bind whose EADDRINUSE comes only at listen(2), on other systems)
// and no handle with no error. A stand-in cluster gives them; the real primary is in
// test/ring-server-processes.test.ts.
import { describe, expect, it } from 'vitest';
import { askPrimary, type ClusterHandle } from '../src/ring/cluster-listen.js';
import { listenArgs } from '../src/ring/listen-args.js';

function answerOf(errno: number | null, handle: ClusterHandle | null, args: unknown[]): Promise<Error | null> {
  const cluster = { isWorker: true, _getServer: (_server: object, _query: object, callback: (e: number | null, h: ClusterHandle | null) => void) => callback(errno, handle) };
  return new Promise((resolve) => askPrimary(cluster, {}, listenArgs(args), (err) => resolve(err)));
}

const boundTo = (port: number): ClusterHandle => ({
  close: () => {},
  getsockname: (out) => {
    Object.assign(out, { address: '127.0.0.1', family: 'IPv4', port });
    return 0;
  },
});

describe("askPrimary: the primary's answer as net reads it", () => {
  it('a socket bound to another port than asked: bind EADDRINUSE at the host and port asked for', async () => {
    expect(await answerOf(0, boundTo(8081), [8080, '127.0.0.1'])).toMatchObject({
      message: 'bind EADDRINUSE 127.0.0.1:8080', code: 'EADDRINUSE', errno: -98, syscall: 'bind', address: '127.0.0.1', port: 8080 });
    expect(await answerOf(0, boundTo(8080), [8080, '127.0.0.1'])).toBeNull();
    // a getsockname that fails is that error, not a port taken
    const unnamed: ClusterHandle = { close: () => {}, getsockname: () => -9 };
    expect(await answerOf(0, unnamed, [8080, '127.0.0.1'])).toMatchObject({ message: 'bind EBADF 127.0.0.1:8080', code: 'EBADF', errno: -9 });
    expect(await answerOf(0, boundTo(40000), [0, '127.0.0.1'])).toBeNull(); // port 0: any port will do
  });

  it("no handle and no error: bind EINVAL; the primary's own error as it gave it, a path's without a port", async () => {
    expect(await answerOf(null, null, [8080])).toMatchObject({ message: 'bind EINVAL null:8080', code: 'EINVAL', errno: -22, address: null });
    expect(await answerOf(-13, null, ['/run/x.sock'])).toMatchObject({ message: 'bind EACCES /run/x.sock', code: 'EACCES', address: '/run/x.sock' });
    expect(await answerOf(-13, null, ['/run/x.sock'])).not.toHaveProperty('port');
    // port 0 is no port of the message's, as net's ExceptionWithHostPort leaves it out
    const anyPort = await answerOf(-98, null, [0, '127.0.0.1']);
    expect(anyPort).toMatchObject({ message: 'bind EADDRINUSE 127.0.0.1', address: '127.0.0.1' });
    expect(anyPort).not.toHaveProperty('port');
    expect(await answerOf(-98, null, [0])).toMatchObject({ message: 'bind EADDRINUSE', address: null });
  });
});
