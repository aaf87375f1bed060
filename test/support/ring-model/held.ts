// The buffers JS holds in the Ring's model-based test: giving one back (release), sending one
// out (stream.send, also through another stream than the one it came from), sending a copy
// (stream.write), and the release of a buffer JS does not hold, which must throw.
import { coverage, type Held, type StreamLike, type World } from './world.js';

function forget(world: World, held: Held): void {
  const at = world.held.indexOf(held);
  if (at >= 0) world.held.splice(at, 1);
}

/** An error the Ring may throw at a buffer or stream call now: it is closing, or the stream is
 * (close() was called: the addon then takes no more sends, while the queued ones go out). */
function allowedThrow(world: World, e: unknown, stream?: StreamLike): boolean {
  const code = (e as { code?: string }).code;
  if (code === 'ERR_RING_CLOSED') return world.closing !== undefined;
  return code === 'ERR_RING_STREAM_CLOSED' && (stream?.closeCalled === true || world.closing !== undefined);
}

/** pool.release(id) of a buffer JS holds. */
export function releaseHeld(world: World, held: Held, who: string): void {
  if (!world.held.includes(held)) return;
  try {
    world.pools[held.pool].release(held.id);
  } catch (e) {
    if (!allowedThrow(world, e)) world.fail(`${who}: release(${held.id}) of a held buffer threw ${(e as Error).stack}`);
  }
  forget(world, held);
}

/** stream.send(id, length) of a held buffer: its bytes go out on the stream's socket. */
export function sendHeld(world: World, held: Held, via: StreamLike): void {
  const out = via.duct.outbound!;
  const before = out.length;
  // (unix sockets count a send's memory, about twice its bytes, against the send buffer)
  if (world.sndbuf !== undefined && out.unread >= world.sndbuf / 2) coverage.heldSendsIntoFullSocket++;
  out.append(held.bytes);
  try {
    via.stream.send(held.id, held.bytes.length);
    forget(world, held);
  } catch (e) {
    out.truncate(before);
    if (!allowedThrow(world, e, via)) world.fail(`${via.name}: send(${held.id}) threw ${(e as Error).stack}`);
    releaseHeld(world, held, via.name);
  }
}

/** stream.write(copy): the bytes go out on the stream's socket. */
export function writeCopy(world: World, via: StreamLike, bytes: Buffer): void {
  const out = via.duct.outbound!;
  const before = out.length;
  out.append(bytes);
  try {
    via.stream.write(bytes);
  } catch (e) {
    out.truncate(before);
    if (!allowedThrow(world, e, via)) world.fail(`${via.name}: write() threw ${(e as Error).stack}`);
  }
}

/** pool.release(id) of a buffer the model says JS does not hold: must throw, and held() must
 * say false. */
export function releaseNotHeld(world: World, pool: number, id: number, where: string): void {
  if (world.closing !== undefined || world.held.some((h) => h.pool === pool && h.id === id)) return;
  const ring = world.pools[pool];
  if (ring.held(id)) world.fail(`${where}: pool ${pool}.held(${id}) is true, but JS does not hold it`);
  try {
    ring.release(id);
    world.fail(`${where}: pool ${pool}.release(${id}) of a buffer JS does not hold did not throw`);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (world.poolClosed[pool]) {
      if (code !== 'ERR_RING_BUFFER_RING_CLOSED') world.fail(`${where}: pool ${pool} is closed, release(${id}) threw ${(e as Error).stack}`);
    } else if (code === 'ERR_RING_BUFFER_RETURNED') coverage.notHeldReleaseThrew++;
    else world.fail(`${where}: pool ${pool}.release(${id}) threw ${(e as Error).stack}`);
  }
}

/** After each step: what each pool says JS holds is what the model says. */
export function checkHeld(world: World, where: string): void {
  if (world.closing !== undefined) return;
  world.pools.forEach((ring, p) => {
    for (let id = 0; id < ring.count; id++) {
      const model = world.held.some((h) => h.pool === p && h.id === id);
      if (ring.held(id) !== model) world.fail(`${where}: pool ${p}.held(${id}) is ${ring.held(id)}, the model says ${model}`);
    }
  });
}

/** pool.close(): refused (ERR_RING_BUFFER_RING_BUSY) while a stream on it is open, else the
 * buffers JS holds of it are no one's (held() false, release() throws) and no stream opens on
 * it. A stream that ended or was closed may still be finishing: either answer then. */
export function closePool(world: World, pool: number, where: string): void {
  if (world.closing !== undefined || world.poolClosed[pool]) return;
  const ring = world.pools[pool];
  const open = world.streams.find((s) => s.pool === pool && !s.closeCalled && !s.ended);
  const finishing = world.streams.some((s) => s.pool === pool && !s.finished);
  const held = world.held.filter((h) => h.pool === pool);
  try {
    ring.close();
  } catch (e) {
    if ((e as { code?: string }).code !== 'ERR_RING_BUFFER_RING_BUSY' || !finishing) world.fail(`${where}: pool ${pool}.close() threw ${(e as Error).stack}`);
    else coverage.poolCloseRefused++;
    return;
  }
  if (open !== undefined) world.fail(`${where}: pool ${pool}.close() succeeded while ${open.name} on it is open`);
  world.poolClosed[pool] = true;
  if (held.length > 0) coverage.poolClosedWhileHeld++;
  for (const h of held) forget(world, h);
  for (let id = 0; id < ring.count; id++) if (ring.held(id)) world.fail(`${where}: pool ${pool} closed, held(${id}) is still true`);
  for (const h of held) releaseNotHeld(world, pool, h.id, `${where}, a buffer held as its pool closed`);
}
