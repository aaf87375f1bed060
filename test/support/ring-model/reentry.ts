// What JS that re-enters the Ring does in the model-based test, from a getter, a `then` or a
// handler (world.reenter): close the Ring or a stream, open a stream on another socket, start a
// recv on another fd, detach or shrink the views of a read in flight.
import { detach, shrink } from './getters.js';
import { freeReadable, readDuct } from './ops.js';
import { openStream } from './streams.js';
import { coverage, type Reentry, type World } from './world.js';

export function installReentry(world: World): void {
  world.reenter = (action: Reentry, where: string) => {
    switch (action) {
      case 'closeRing':
        return world.closeRing(where);
      case 'closeStream': {
        const s = world.streams.find((x) => !x.closeCalled);
        s?.close(where);
        return;
      }
      case 'openStream': {
        const duct = world.sockets.find((d) => d.reader === undefined && d.writer === undefined && !d.peerClosed);
        if (duct !== undefined) openStream(world, duct, world.streams.length % world.pools.length, undefined, where);
        return;
      }
      case 'startRecv': {
        const duct = freeReadable(world);
        if (duct !== undefined) readDuct(world, duct, { call: 'recv', sizes: [16], position: 'omitted', memory: 'heap' }, where);
        return;
      }
      case 'detachOther':
      case 'shrinkOther':
        for (const own of world.inFlightViews) {
          for (const v of own.views) {
            if (v.byteLength === 0) continue;
            if (action === 'detachOther') {
              if (!detach(v)) continue;
              coverage.detachedInFlight++;
              return;
            }
            if (shrink(v)) {
              coverage.shrunkInFlight++;
              return;
            }
          }
        }
    }
  };
}
