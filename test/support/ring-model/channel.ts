// Byte accounting for one direction of one fd in the Ring's model-based test: what was put in
// (in order), how far the reader got, and whether the reader may resume past a gap (bytes a
// closing stream or a cancelled send were allowed to drop). Every byte has a value that names its
// channel (the top two bits) and a position-dependent low part, so a byte delivered to the wrong
// channel, twice, out of order or after a gap it had no right to is caught, not just counted.

/** The bytes that channel `id` (0-3) carries from position `from` on, `length` of them. */
export function taggedBytes(id: number, seed: number, from: number, length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i++) {
    const j = from + i;
    // a cheap hash of (seed, id, j): neighbours differ, so a shifted chunk does not match
    let h = Math.imul(j ^ Math.imul(seed, 0x9e3779b1) ^ (id << 20), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    out[i] = (id << 6) | (h & 63);
  }
  return out;
}

/** The channel a byte names. */
export function channelOfByte(byte: number): number {
  return byte >> 6;
}

// (no spread into Math.min: a read whose views no longer show its bytes fits at every place
// past a gap, and a socket may hold 100,000 of them)
const lowest = (xs: number[]) => xs.reduce((a, b) => Math.min(a, b));

export class ByteChannel {
  /** Everything put in so far, in order; `known[i]` is 0 where the content is not known (a
   * write whose source was detached: its count is known, its bytes are not). */
  #expected = Buffer.alloc(0);
  #known = new Uint8Array(0);
  #length = 0;
  /** Bytes the reader got so far (or skipped past a gap it was allowed). */
  consumed = 0;
  /** Set when a gap is allowed: the next delivery may start anywhere at or after `consumed`. */
  #gapAllowed = false;
  /** Other places the reader may be at: a short delivery past a gap can fit more than one place
   * (a byte carries six bits of its position), so each place it fit is kept, and each later
   * delivery keeps the places it fits next to. `consumed` is the first of them. */
  #others: number[] = [];
  /** Bytes delivered past a gap. */
  skipped = 0;
  /** The reader may never get the last bytes (sends dropped when the Ring closed, cancelled, or
   * after a send failed). */
  mayEndShort = false;

  /** checkOwner: every byte must carry this channel's id (bytes a peer wrote; an outbound
   * channel may carry another channel's bytes, echoed from a buffer). */
  constructor(readonly id: number, readonly name: string, readonly checkOwner = true) {}

  get length(): number {
    return this.#length;
  }

  /** Bytes put in and not yet delivered (by the furthest place the reader may be at). */
  get unread(): number {
    return this.#length - this.#others.reduce((a, b) => Math.max(a, b), this.consumed);
  }

  #grow(need: number): void {
    if (need <= this.#expected.length) return;
    const size = Math.max(need, this.#expected.length * 2, 256);
    const expected = Buffer.alloc(size);
    this.#expected.copy(expected);
    const known = new Uint8Array(size);
    known.set(this.#known);
    this.#expected = expected;
    this.#known = known;
  }

  /** Appends bytes whose content is known. Returns the position they start at. */
  append(bytes: Uint8Array): number {
    const at = this.#length;
    this.#grow(at + bytes.length);
    this.#expected.set(bytes, at);
    this.#known.fill(1, at, at + bytes.length);
    this.#length += bytes.length;
    return at;
  }

  /** Appends `count` bytes of unknown content (their source was detached). */
  appendUnknown(count: number): void {
    this.#grow(this.#length + count);
    this.#known.fill(0, this.#length, this.#length + count);
    this.#length += count;
  }

  /** Cuts what was put in back to `length` (a send that went out short or not at all). Throws
   * when the reader already got past that point. */
  truncate(length: number): void {
    if (length > this.#length) throw new Error(`${this.name}: truncate to ${length} past the end ${this.#length}`);
    if (this.consumed > length) throw new Error(`${this.name}: the peer read ${this.consumed} bytes but only ${length} were sent`);
    this.#length = length;
  }

  /** The reader may still skip bytes: no delivery since allowGap(). */
  get gapOpen(): boolean {
    return this.#gapAllowed;
  }

  /** From here on the reader may skip bytes once (a stream closed, a send cancelled). */
  allowGap(): void {
    this.#gapAllowed = true;
  }

  /** Sends may have been dropped: a gap, and the end may not come. */
  allowShortEnd(): void {
    this.#gapAllowed = true;
    this.mayEndShort = true;
  }

  /** Where the next writer's bytes begin after a stream's sends were dropped (it finished),
   * in order: one read may take the last bytes that went out before a drop and then these.
   * (Several: each stream after the first may drop its own last sends before the peer reads.) */
  #resumes: number[] = [];

  /** The stream whose sends were dropped is done: what comes next is another writer's. */
  markResume(): void {
    if (this.#gapAllowed && this.mayEndShort && this.#resumes.at(-1) !== this.#length) this.#resumes.push(this.#length);
  }

  /** A read across drops: bytes from `from` up to a point before the next drop's resume
   * point, then on from there, and so on. Returns where it ends and the bytes it skipped, or
   * undefined. (Bytes carry their position's low bits: a wrong split fits only by chance, so
   * only the few splits just before the first mismatch are tried.) */
  #acrossDrops(bytes: Uint8Array, from: number, next: number): { end: number; skipped: number } | undefined {
    const to = this.#resumes[next];
    if (to === undefined || to < from) return undefined;
    let m = 0;
    while (m < bytes.length && from + m < to && (this.#known[from + m] !== 1 || this.#expected[from + m] === bytes[m])) m++;
    for (let k = m; k >= Math.max(0, m - 64); k--) {
      const rest = bytes.subarray(k);
      if (this.#matches([rest], to)) return { end: to + rest.length, skipped: to - (from + k) };
      const further = this.#acrossDrops(rest, to, next + 1);
      if (further !== undefined) return { end: further.end, skipped: further.skipped + to - (from + k) };
    }
    return undefined;
  }

  /** At the end: every byte put in was delivered, unless the end may be short. */
  complete(): string | undefined {
    // (a gap still open: the bytes after `consumed` were a closing stream's to drop)
    if (this.consumed === this.#length || this.#others.includes(this.#length) || this.mayEndShort || this.#gapAllowed) return undefined;
    return `${this.name}: ${this.#length} bytes were put in, the reader got ${this.consumed}: ${this.#length - this.consumed} lost`;
  }

  /** Checks a delivery of `bytes` (what a reader got, in order). Returns an error message or
   * undefined. */
  deliver(bytes: Uint8Array, who: string): string | undefined {
    return this.deliverParts([bytes], who);
  }

  /** The reader got `count` bytes whose content it cannot show (its view was detached). */
  deliverUnseen(count: number, who: string): string | undefined {
    return this.deliverParts([count], who);
  }

  /** One read's bytes, in order: seen bytes, or a count of bytes its views no longer show. */
  deliverParts(parts: Part[], who: string): string | undefined {
    const wrong = this.#owners(parts, who);
    if (wrong !== undefined || partsLength(parts) === 0) return wrong;
    const places = [this.consumed, ...this.#others];
    const fits = this.#gapAllowed ? this.#findAll(parts, lowest(places)) : places.filter((at) => this.#matches(parts, at));
    const across = fits.length === 0 && this.#gapAllowed && parts.length === 1 && typeof parts[0] !== 'number'
      ? this.#acrossDrops(parts[0], this.consumed, this.#resumes.findIndex((r) => r >= this.consumed)) : undefined;
    if (across !== undefined) {
      this.skipped += across.skipped;
      this.consumed = across.end;
      this.#resumes = this.#resumes.filter((r) => r > across.end);
      this.#gapAllowed = this.#resumes.length > 0;
      this.#others = [];
      return undefined;
    }
    if (fits.length === 0) return this.#mismatch(parts, this.consumed, who);
    this.#take(parts, fits[0]);
    this.#others = fits.slice(1).map((at) => at + partsLength(parts));
    return undefined;
  }

  /** Sends dropped (mayEndShort) are the last the Ring had put in then: a delivery that skipped
   * nothing may have stopped short of them (all the socket had), and the next writer's bytes
   * come after them. The gap stays open until a delivery skips. */
  #gapStillAhead(at: number): boolean {
    return this.mayEndShort && at === this.consumed;
  }

  /** The reads of one batch, each in order but the batch in the kernel's: on one socket,
   * io_uring wakes the read armed last first, so their order is not the requests'. Together
   * they must be the next bytes, each read one run of them. Past a gap they may start at more
   * than one place: each is kept, as for a single delivery. */
  deliverAnyOrder(reads: { parts: Part[]; who: string }[]): string | undefined {
    for (const r of reads) {
      const wrong = this.#owners(r.parts, r.who);
      if (wrong !== undefined) return wrong;
    }
    const left = reads.filter((r) => partsLength(r.parts) > 0);
    if (left.length === 0) return undefined;
    if (left.length === 1) return this.deliverParts(left[0].parts, left[0].who);
    const total = left.reduce((n, r) => n + partsLength(r.parts), 0);
    const places = [this.consumed, ...this.#others];
    let starts = places;
    if (this.#gapAllowed) {
      starts = [];
      for (let at = lowest(places); at + total <= this.#length; at++) starts.push(at);
    }
    const fits = starts.filter((at) => this.#arranges(left, at));
    if (fits.length === 0) return this.#mismatch(left[0].parts, this.consumed, left[0].who);
    this.#take([total], fits[0]);
    this.#others = fits.slice(1).map((at) => at + total);
    return undefined;
  }

  /** Whether the reads, in some order, are the bytes from `at` on. Every order is tried (a
   * batch has at most a few reads): a 1-byte read may fit where a longer one belongs. */
  #arranges(reads: { parts: Part[] }[], at: number): boolean {
    if (reads.length === 0) return true;
    return reads.some((r, i) => this.#matches(r.parts, at) &&
      this.#arranges(reads.filter((_, j) => j !== i), at + partsLength(r.parts)));
  }

  #owners(parts: Part[], who: string): string | undefined {
    if (!this.checkOwner) return undefined;
    for (const p of parts) {
      if (typeof p === 'number') continue;
      for (let i = 0; i < p.length; i++) {
        const owner = channelOfByte(p[i]);
        if (owner !== this.id) return `${who} on ${this.name} got a byte (0x${p[i].toString(16)}) that belongs to channel ${owner}: another fd's bytes`;
      }
    }
    return undefined;
  }

  #take(parts: Part[], at: number): void {
    const keepGap = this.#gapAllowed && this.#gapStillAhead(at);
    this.skipped += at - this.consumed;
    this.consumed = at + partsLength(parts);
    // (a later drop's resume point still ahead: the reader may skip there too)
    if (!keepGap) this.#resumes = this.#resumes.filter((r) => r > this.consumed);
    this.#gapAllowed = keepGap || this.#resumes.length > 0;
    this.#others = [];
  }

  #matches(parts: Part[], at: number): boolean {
    if (at + partsLength(parts) > this.#length) return false;
    for (const p of parts) {
      if (typeof p === 'number') {
        at += p;
        continue;
      }
      for (let i = 0; i < p.length; i++, at++) if (this.#known[at] === 1 && this.#expected[at] !== p[i]) return false;
    }
    return true;
  }

  /** The places at or after `from` where the parts fit, at most `most` of them. */
  #findAll(parts: Part[], from: number, most = Infinity): number[] {
    const out: number[] = [];
    for (let at = from; at + partsLength(parts) <= this.#length && out.length < most; at++) if (this.#matches(parts, at)) out.push(at);
    return out;
  }

  #mismatch(parts: Part[], at: number, who: string): string {
    const n = partsLength(parts);
    if (at + n > this.#length) return `${who} on ${this.name} got ${n} bytes at position ${at}, but only ${this.#length} were put in`;
    let off = at;
    for (const p of parts) {
      if (typeof p === 'number') {
        off += p;
        continue;
      }
      for (let i = 0; i < p.length; i++, off++) {
        if (this.#known[off] === 1 && this.#expected[off] !== p[i]) {
          return `${who} on ${this.name} got the wrong byte at position ${off} (0x${p[i].toString(16)}, expected 0x${this.#expected[off].toString(16)})` +
            `${this.#gapAllowed ? ', and found its bytes nowhere after it' : ''}: bytes lost, repeated or out of order`;
        }
      }
    }
    return `${who} on ${this.name}: ${n} bytes that fit nowhere`;
  }
}

/** Part of a read: bytes a view shows, or how many bytes a view (detached, shrunk) lost. */
export type Part = Uint8Array | number;

function partsLength(parts: Part[]): number {
  let n = 0;
  for (const p of parts) n += typeof p === 'number' ? p : p.length;
  return n;
}
