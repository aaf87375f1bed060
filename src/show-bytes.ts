// Bytes and text as one safe terminal line: what the demos print of a payload, and every
// message that names a user's path.

const controlEscapes: Record<number, string> = { 0: '\\0', 9: '\\t', 10: '\\n', 13: '\\r', 92: '\\\\' };
// Characters that could garble or spoof a terminal: controls, format characters (bidi
// overrides, zero-width), unassigned/private code points and line/paragraph separators.
const invisible = /[\p{C}\p{Zl}\p{Zp}]/u;

/**
 * Bytes as one line of visible text. Printable ASCII stays as is; backslash becomes `\\`;
 * NUL, tab, newline and carriage return become `\0 \t \n \r`; a complete UTF-8 sequence of a
 * printable character stays as that character; every other byte becomes `\xHH`. So a binary
 * file never garbles the terminal, and the bytes can be told back exactly from the text.
 */
export function showBytes(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    if (b in controlEscapes) {
      out += controlEscapes[b];
      i++;
    } else if (b >= 0x20 && b < 0x7f) {
      out += String.fromCharCode(b);
      i++;
    } else {
      const ch = utf8CharAt(bytes, i);
      if (ch !== undefined && !invisible.test(ch.text)) {
        out += ch.text;
        i += ch.length;
      } else {
        out += `\\x${b.toString(16).padStart(2, '0')}`;
        i++;
      }
    }
  }
  return out;
}

/** Text as one safe terminal line (see showBytes). */
export function showText(text: string): string {
  return showBytes(new TextEncoder().encode(text));
}

/** The well-formed (shortest form, no surrogate) multi-byte UTF-8 character starting at i. */
function utf8CharAt(bytes: Uint8Array, i: number): { text: string; length: number } | undefined {
  const b = bytes[i];
  let length: number;
  let cp: number;
  let min: number;
  if (b >= 0xc2 && b <= 0xdf) { length = 2; cp = b & 0x1f; min = 0x80; }
  else if (b >= 0xe0 && b <= 0xef) { length = 3; cp = b & 0x0f; min = 0x800; }
  else if (b >= 0xf0 && b <= 0xf4) { length = 4; cp = b & 0x07; min = 0x10000; }
  else return undefined;
  if (i + length > bytes.length) return undefined;
  for (let k = 1; k < length; k++) {
    const c = bytes[i + k];
    if ((c & 0xc0) !== 0x80) return undefined;
    cp = (cp << 6) | (c & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return undefined;
  return { text: String.fromCodePoint(cp), length };
}
