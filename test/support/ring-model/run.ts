// The child process of test/ring-model.test.ts: runs the Ring's model-based property once per
// seed (IOLAB_FUZZ_SEED, then one more per run, IOLAB_FUZZ_RUNS runs), printing a JSON line
// before each run, so that a crash still names the seed that caused it, a line per failure with
// fast-check's report (seed, path, the shrunk commands), and a summary with what the generators
// reached. IOLAB_FUZZ_SEED with IOLAB_FUZZ_PATH and IOLAB_FUZZ_REPLAY replays a shrunk failure.
import fc from 'fast-check';
import fs from 'node:fs';
import { liveObjects, recvmsg, sendmsg, socketpair, close } from '../../../src/index.js';
import { commandsOf } from './commands.js';
import { latestGen } from './version.js';
import { finish } from './finish.js';
import { installReentry } from './reentry.js';
import { coverage, World, type WorldSpec } from './world.js';
import { openFds, fdsLeftOpen } from '../open-fds.js';

const runs = Number(process.env.IOLAB_FUZZ_RUNS ?? 300);
// the generators' version (commands.ts): a seed replays with the one that found it
const gen = Number(process.env.IOLAB_FUZZ_GEN || latestGen);
const firstSeed = Number(process.env.IOLAB_FUZZ_SEED ?? (Date.now() % 0x7fffffff));
const path = process.env.IOLAB_FUZZ_PATH || undefined;
// fc.commands' own part of a path (the `replayPath` in a counterexample's last command)
const replayPath = process.env.IOLAB_FUZZ_REPLAY || undefined;
// (the test gives a folder it removes; run alone, the child makes one and removes it)
const dir = process.env.IOLAB_MODEL_DIR ?? fs.mkdtempSync('/tmp/iolab-ring-model-');
if (process.env.IOLAB_MODEL_DIR === undefined) process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
const waitMs = Number(process.env.IOLAB_MODEL_WAIT_MS ?? 3000);
const keepGoing = process.env.IOLAB_FUZZ_KEEP_GOING === '1';
const shrinkMs = Number(process.env.IOLAB_FUZZ_SHRINK_MS ?? 60_000);
const noShrink = process.env.IOLAB_FUZZ_SHRINK_MS === '0';

const pause = new Int32Array(new SharedArrayBuffer(4));
function print(line: object): void {
  const text = Buffer.from(`${JSON.stringify(line)}\n`);
  // stdout may be a non-blocking pipe its reader empties late (a long failure report on a
  // loaded machine): wait for room, never lose a line or die of EAGAIN
  for (let at = 0; at < text.length;) {
    try {
      at += fs.writeSync(1, text, at);
    } catch (e) {
      if ((e as { code?: string }).code !== 'EAGAIN') throw e;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

async function collect(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await new Promise((r) => setImmediate(r));
  }
}

// The prototype of what recvmsg resolves with, for a `then` getter on it (getters.ts).
{
  const [a, b] = socketpair('seqpacket');
  sendmsg(a, [Buffer.from('x')]);
  World.recvResultPrototype = Object.getPrototypeOf(recvmsg(b, [Buffer.alloc(1)]));
  close(a);
  close(b);
}

// A handler's planned throw reaches the process as an uncaught exception; anything else fails.
let current: World | undefined;
let thrown = 0;
process.on('uncaughtException', (err) => {
  if (err.message.startsWith('planned:')) thrown++;
  else if (current !== undefined) current.fail(`uncaught exception: ${err.stack}`);
  else throw err;
});

// Version 1's world, drawn as it always was; version 2 adds buffers larger than a small
// socket's send buffer and that small send buffer; version 4 a CQ as small as the SQ.
const worldSpecV1 = fc.record({
  seed: fc.nat({ max: 1 << 20 }),
  entries: fc.constantFrom(4, 8, 32),
  pools: fc.tuple(
    fc.record({ count: fc.constantFrom(1, 2, 4), size: fc.constantFrom(4, 16, 64) }),
    fc.record({ count: fc.constantFrom(2, 8), size: fc.constantFrom(32, 512) }),
  ),
  end: fc.constantFrom<WorldSpec['end']>('settled', 'settled', 'settled', 'ringClose'),
});
const worldSpecV2 = fc.record({
  seed: fc.nat({ max: 1 << 20 }),
  entries: fc.constantFrom(4, 8, 32),
  pools: fc.tuple(
    fc.record({ count: fc.constantFrom(1, 2, 4), size: fc.constantFrom(4, 16, 64) }),
    fc.record({ count: fc.constantFrom(2, 8), size: fc.constantFrom(32, 512, 4096) }),
  ),
  end: fc.constantFrom<WorldSpec['end']>('settled', 'settled', 'settled', 'ringClose'),
  // (1: the kernel's least, about 4.5 KiB; a unix socket's send then takes about 2 KiB at once)
  sndbuf: fc.option(fc.constantFrom(1, 4096, 16384), { nil: undefined, freq: 3 }),
});
// version 4 adds a CQ as small as the SQ in a third of the worlds
const worldSpecV4 = fc.tuple(worldSpecV2, fc.constantFrom(false, false, true)).map(([w, tinyCq]) => ({ ...w, tinyCq }));
const worldSpec: fc.Arbitrary<WorldSpec> = (gen === 1 ? worldSpecV1 : gen < 4 ? worldSpecV2 : worldSpecV4).map((w) => ({ ...w, gen }));

async function closeWorld(world: World): Promise<string | undefined> {
  world.closeRing('the teardown');
  const closed = await Promise.race([world.closing!.then(() => true, () => true), new Promise<boolean>((r) => setTimeout(() => r(false), waitMs))]);
  world.unmap();
  for (const fd of world.fdsOpened.splice(0)) fs.closeSync(fd);
  return closed ? undefined : 'ring.close() never settled';
}

const property = fc.asyncProperty(worldSpec, fc.commands(commandsOf(gen), { maxCommands: gen === 1 ? 30 : 50, size: 'max', replayPath }), async (spec, cmds) => {
  const fdsBefore = openFds();
  const world = World.create(spec, dir);
  installReentry(world);
  current = world;
  thrown = 0;
  coverage.sequences++;
  let error: unknown;
  try {
    await fc.asyncModelRun(() => ({ model: { world }, real: world }), cmds);
    await finish(world, waitMs);
    world.throwIfFailed();
    if (thrown !== world.plannedThrows) world.fail(`${world.plannedThrows} handler(s) threw, ${thrown} reached the process`);
    world.throwIfFailed();
  } catch (e) {
    error = e;
  }
  const stuck = await closeWorld(world);
  current = undefined;
  if (error !== undefined) throw error;
  if (stuck !== undefined) throw new Error(stuck);
  await collect();
  const live = Object.entries(liveObjects()).filter(([, n]) => n !== 0);
  if (live.length > 0) throw new Error(`after the sequence, live objects: ${JSON.stringify(Object.fromEntries(live))}`);
  // a leak is an fd opened and left (open-fds.ts says why only that)
  const opened = fdsLeftOpen(fdsBefore);
  if (opened.length > 0) throw new Error(`after the sequence, fds left open: ${opened.join(', ')}`);
});

const failures: { run: number; seed: number; report: string }[] = [];
let done = 0;
for (let run = 0; run < (path === undefined ? runs : 1); run++) {
  const seed = (firstSeed + run) | 0;
  print({ run, seed });
  const started = Date.now();
  try {
    await fc.assert(property, { seed, numRuns: 1, path, endOnFailure: noShrink, interruptAfterTimeLimit: noShrink ? undefined : shrinkMs });
  } catch (e) {
    // fast-check's report (seed, path, the shrunk commands), then what the property threw
    const cause = (e as Error).cause as Error | undefined;
    const report = `${(e as Error).message}\n${cause?.stack ?? ''}`;
    failures.push({ run, seed, report });
    print({ failure: { run, seed, report } });
    if (!keepGoing) break;
  }
  done++;
  print({ ran: run, ms: Date.now() - started });
  // (what was reached so far, now and then: a crash later loses only what came after)
  if (done % 25 === 0) print({ reached: coverage });
}
print({ done, failures: failures.length, coverage });
process.exit(failures.length === 0 ? 0 : 1);
