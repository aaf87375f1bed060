// Stryker's ignorer for a sampled run (scripts/stryker/sample.mjs): a mutate range covers a sampled
// place and every node inside it; a node that is not a sampled place and holds none is ignored,
// with its subtree. Nodes that hold a sampled place are kept (their own mutants are outside every
// range, so Stryker does not make them).
import { PluginKind, declareValuePlugin } from '@stryker-mutator/api/plugin';
import { OUTSIDE, readSample } from './sample.mjs';

const path = process.env.IOLAB_STRYKER_SAMPLE;
const places = path ? readSample(path).places : [];

const before = (a, b) => a.line < b.line || (a.line === b.line && a.column <= b.column);
const within = (outer, inner) => before(outer.start, inner.start) && before(inner.end, outer.end);

export const strykerPlugins = [declareValuePlugin(PluginKind.Ignore, 'iolab-sample', {
  shouldIgnore(nodePath) {
    const loc = nodePath.node?.loc;
    if (!loc || !nodePath.hub?.file?.opts?.filename) return undefined;
    const file = nodePath.hub.file.opts.filename;
    const mine = places.filter((p) => file.endsWith(p.file));
    return mine.some((p) => within(loc, p)) ? undefined : OUTSIDE;
  },
})];
