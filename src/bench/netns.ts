// Two hosts on one machine for bench echo --netns: two network namespaces joined by a veth
// pair, the server in one and the load generator in the other, optionally with tc netem on
// both ends of the link. Names are unique per run; remove() takes everything away again and is
// also registered for process exit, so every way out (a result, an error, Ctrl-C, a crashed
// server) leaves no namespace or link behind. SIGKILL runs no exit handler: the names carry the
// owning pid, and the next run removes the namespaces of a run whose process is gone.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { UserError } from '../cli-util.js';
import { iolabArgv } from '../spawn-iolab.js';
import { processIsAlive } from '../procfs.js';

/** tc netem settings as the user wrote them, e.g. { delay: '200us', rate: '10gbit' }. */
export type Netem = Record<string, string>;

const netemKeys: Record<string, RegExp> = {
  delay: /^\d+(us|ms|s)$/,
  jitter: /^\d+(us|ms|s)$/,
  rate: /^\d+(bit|kbit|mbit|gbit|tbit)$/,
  loss: /^\d+(\.\d+)?%$/,
};

/** "delay=200us,rate=10gbit" -> { delay: '200us', rate: '10gbit' }; anything else is one line. */
export function parseNetem(text: string): Netem {
  const out: Netem = {};
  for (const part of text.split(',')) {
    const [key, value, extra] = part.trim().split('=');
    const rule = netemKeys[key];
    if (!rule || value === undefined || extra !== undefined || !rule.test(value)) {
      throw new UserError(`--netem: expected key=value pairs of ${Object.keys(netemKeys).join(', ')} ` +
        `(e.g. delay=200us,rate=10gbit), got '${part.trim()}'`);
    }
    out[key] = value;
  }
  if (out.jitter && !out.delay) throw new UserError('--netem: jitter needs a delay');
  return out;
}

export interface NetnsLink {
  serverNamespace: string;
  clientNamespace: string;
  serverAddress: string;
  clientAddress: string;
  /** The veth pair's MTU, as the kernel reports it. */
  mtu: number;
  /** tc netem on both ends (each direction is shaped), or none. */
  netem?: Netem;
}

export interface Netns {
  link: NetnsLink;
  /** [file, argv] that runs `iolab ...args` inside the server's or the client's namespace. */
  serverArgv(args: string[]): [string, string[]];
  clientArgv(args: string[]): [string, string[]];
  remove(): void;
}

function run(argv: string[]): { ok: boolean; out: string; err: string } {
  const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8' });
  return { ok: r.status === 0, out: r.stdout ?? '', err: (r.stderr ?? r.error?.message ?? '').trim() };
}

/** Root and iproute2, or the one line that says what is missing (exit status 2). */
export function checkNetnsAllowed(): void {
  if (process.getuid?.() !== 0) throw new UserError('--netns needs root (it creates network namespaces and a veth pair)', 2);
  const ip = spawnSync('ip', ['-V'], { encoding: 'utf8' });
  if (ip.error || ip.status !== 0) throw new UserError("--netns needs iproute2's ip command, which was not found", 2);
}

const ourName = /^iolab-(\d+)-[0-9a-f]{8}-(server|client)$/;

/** Removes the namespaces of runs whose process is gone (SIGKILLed: no exit handler ran), with
 * whatever still runs inside them (orphans of that run; a child started since this change dies
 * with its parent). A veth pair goes with its namespace. */
export function removeStaleNetns(): string[] {
  const removed: string[] = [];
  for (const line of run(['ip', 'netns', 'list']).out.split('\n')) {
    const name = line.split(' ')[0];
    const owner = ourName.exec(name)?.[1];
    if (owner === undefined || processIsAlive(Number(owner))) continue;
    for (const pid of run(['ip', 'netns', 'pids', name]).out.split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    if (run(['ip', 'netns', 'del', name]).ok) removed.push(name);
  }
  return removed;
}

export function createNetns(netem?: Netem): Netns {
  checkNetnsAllowed();
  removeStaleNetns();
  const id = randomBytes(4).toString('hex');
  const serverNs = `iolab-${process.pid}-${id}-server`;
  const clientNs = `iolab-${process.pid}-${id}-client`;
  // Interface names have 15 bytes at most.
  const serverIf = `iolab${id}s`;
  const clientIf = `iolab${id}c`;
  const serverAddress = '10.201.0.1';
  const clientAddress = '10.201.0.2';
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    process.off('exit', remove);
    // The veth pair goes with either namespace; if it never got there, remove it here.
    run(['ip', 'link', 'del', serverIf]);
    run(['ip', 'netns', 'del', serverNs]);
    run(['ip', 'netns', 'del', clientNs]);
  };
  process.on('exit', remove);
  const step = (argv: string[], what: string) => {
    const r = run(argv);
    if (!r.ok) throw new UserError(`--netns: ${what} failed: ${r.err.split('\n')[0] || `${argv.join(' ')} exited non-zero`}`, 2);
  };
  try {
    step(['ip', 'netns', 'add', serverNs], 'creating a network namespace');
    step(['ip', 'netns', 'add', clientNs], 'creating a network namespace');
    step(['ip', 'link', 'add', serverIf, 'type', 'veth', 'peer', 'name', clientIf], 'creating the veth pair');
    step(['ip', 'link', 'set', serverIf, 'netns', serverNs], 'moving the veth end');
    step(['ip', 'link', 'set', clientIf, 'netns', clientNs], 'moving the veth end');
    for (const [ns, dev, addr] of [[serverNs, serverIf, serverAddress], [clientNs, clientIf, clientAddress]]) {
      step(['ip', '-n', ns, 'addr', 'add', `${addr}/24`, 'dev', dev], 'adding an address');
      step(['ip', '-n', ns, 'link', 'set', 'lo', 'up'], 'bringing up lo');
      step(['ip', '-n', ns, 'link', 'set', dev, 'up'], 'bringing up the veth end');
      if (netem) {
        const r = run(['tc', '-n', ns, 'qdisc', 'add', 'dev', dev, 'root', 'netem', ...Object.entries(netem).flat()]);
        if (!r.ok) {
          const why = /unknown/i.test(r.err) ? "this kernel has no netem qdisc (sch_netem)" : r.err.split('\n')[0];
          throw new UserError(`--netem: tc could not add netem: ${why}`, 2);
        }
      }
    }
    const shown = run(['ip', '-n', serverNs, '-o', 'link', 'show', serverIf]);
    const mtu = Number(/ mtu (\d+)/.exec(shown.out)?.[1] ?? 0);
    const inNs = (ns: string) => (args: string[]): [string, string[]] => {
      const [file, argv] = iolabArgv(args);
      return ['ip', ['netns', 'exec', ns, file, ...argv]];
    };
    return {
      link: { serverNamespace: serverNs, clientNamespace: clientNs, serverAddress, clientAddress, mtu, ...(netem ? { netem } : {}) },
      serverArgv: inNs(serverNs),
      clientArgv: inNs(clientNs),
      remove,
    };
  } catch (err) {
    remove();
    throw err;
  }
}
