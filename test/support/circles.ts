// The circles of a graph of files: its strongly connected sets of two or more (Tarjan's), as
// test/native-layers.test.ts (calls between the addon's objects) and test/import-circles.test.ts
// (imports between the TypeScript sources) read them.

/** The strongly connected sets of two or more nodes of `edges` (each node's successors). */
export function stronglyConnected(edges: Map<string, Iterable<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [], onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next); low.set(v, next++); stack.push(v); onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); }
      else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const set: string[] = [];
    let w: string;
    do { w = stack.pop()!; onStack.delete(w); set.push(w); } while (w !== v);
    if (set.length > 1) found.push(set);
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return found;
}
