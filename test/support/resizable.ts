// Memory an action can shrink: resizable ArrayBuffers are ES2024 (Node 20 has them), newer than
// the ES2022 lib the project compiles against, hence the one cast here.
const Resizable = ArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => ArrayBuffer & { resize(n: number): void };

/** A Uint8Array over a resizable ArrayBuffer of n bytes (it tracks the buffer's length). */
export function resizableBytes(n: number): Uint8Array {
  return new Uint8Array(new Resizable(n, { maxByteLength: n }));
}
