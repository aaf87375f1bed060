// The shared-memory channel as a user gets it: in the project that installed the package, on the
// Node line being tested, programs/channel-consumer.mjs runs each case with
// `import { Channel } from 'iolab'` and reports one line per case. scripts/test-package.mjs runs
// it once per Node line and install mode.
import { copyFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const consumer = join(here, 'programs', 'channel-consumer.mjs');
const tsc = join(here, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc');

// The types as a TypeScript user reads them (no @types/node: the package's types need none).
const typed = `
import { Channel, type ChannelOptions, type ChannelMessage } from 'iolab';
const options: ChannelOptions = { capacity: 1 << 20 };
const channel: Channel = await Channel.create(3, options);
const sent: boolean = channel.trySend(new Uint8Array(4));
const list: ChannelMessage = [new Uint8Array(2), new DataView(new ArrayBuffer(1))];
await channel.send(list);
const many: number = channel.trySendMany([new Uint8Array(1), [new Uint8Array(2)]]);
await channel.sendMany([new Uint8Array(3)]);
const joined: Channel = await Channel.join(4, { zeroCopy: true, spin: 0, signal: AbortSignal.timeout(1000), timeout: 500 });
const view: Uint8Array | null = await channel.receive();
channel.on('message', (m: Uint8Array) => void m.length).on('error', (e: Error) => void e.message);
for await (const m of channel) void m.byteLength;
// @ts-expect-error a message is bytes, not text
channel.trySend('text');
export { sent, view, many, joined };
`;

const cases = {
  child: 'a child process echoes 2,000 messages, each checked, in order',
  worker: 'a worker thread echoes 2,000 messages, each checked, in order',
  orderingUnderLoad: 'ordering under load: 20,000 messages both ways at once through a 16 KiB ring',
  deadPeer: 'a child killed mid-stream: what it sent comes whole, then ERR_CHANNEL_PEER_GONE, no hang',
  backpressure: 'a slow reader: the writer waits, at most a ring in flight, its memory bounded',
};

/** project: the installed project's folder; node: that line's node; run/check: the package
 * test's own (run never throws, in the project's folder; check records one result). */
export async function checks({ project, node, run, check }) {
  copyFileSync(consumer, join(project, 'channel-consumer.mjs'));
  const r = run(node, ['channel-consumer.mjs'], { timeout: 400_000 });
  let results;
  try {
    results = JSON.parse(r.stdout.trim().split('\n').pop());
  } catch {
    check(`the Channel cases ran`, false, r.out);
    return;
  }
  for (const [name, what] of Object.entries(cases)) check(`Channel: ${what}`, results[name] === 'ok', results[name] ?? r.out);
  writeFileSync(join(project, 'channel-types.ts'), typed);
  writeFileSync(join(project, 'tsconfig.channel.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, types: [] }, files: ['channel-types.ts'] }));
  const types = run(process.execPath, [tsc, '-p', join(project, 'tsconfig.channel.json')]);
  check(`Channel's types check in a .ts against the installed package`, types.status === 0, types.out);
}
