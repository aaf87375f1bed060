// Helpers for the demo tests (test/demo-*.test.ts).
import { readdirSync } from 'node:fs';

/** The inverse of showBytes (src/demos/common.ts): the exact bytes a shown line stands for. */
export function unshowBytes(shown: string): Buffer {
  const out: Buffer[] = [];
  const simple: Record<string, number> = { '\\': 0x5c, '0': 0, t: 9, n: 10, r: 13 };
  let i = 0;
  while (i < shown.length) {
    if (shown[i] === '\\') {
      const c = shown[i + 1];
      if (c === 'x') {
        out.push(Buffer.from([parseInt(shown.slice(i + 2, i + 4), 16)]));
        i += 4;
      } else if (c in simple) {
        out.push(Buffer.from([simple[c]]));
        i += 2;
      } else {
        throw new Error(`bad escape at ${i} in ${JSON.stringify(shown)}`);
      }
    } else {
      const ch = String.fromCodePoint(shown.codePointAt(i)!);
      out.push(Buffer.from(ch, 'utf8'));
      i += ch.length;
    }
  }
  return Buffer.concat(out);
}

/** Objects in /dev/shm whose names start with prefix (no leading '/'). */
export function shmObjects(prefix: string): string[] {
  return readdirSync('/dev/shm').filter((f) => f.startsWith(prefix));
}

/** A name unique to this test process, for shm objects. */
let counter = 0;
export function uniqueShmName(tag: string): string {
  return `/iolab-test-${tag}-${process.pid}-${counter++}`;
}
