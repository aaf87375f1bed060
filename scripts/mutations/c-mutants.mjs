// Generates C and C++ mutants by operator, not by choice: every relational operator flipped
// (< to >=) and shifted (< to <=), every && and || swapped, each condition of a compound if
// dropped, every integer constant plus and minus one, each statement of a function body deleted,
// and each two neighbouring arguments of a call swapped. Only code inside function bodies is
// mutated; comments, strings, characters and preprocessor lines never are. Pure: text in,
// mutants out (scripts/mutations/c-run.mjs applies them).

const KEYWORDS = new Set(['if', 'for', 'while', 'switch', 'return', 'sizeof', 'alignof', 'decltype', 'do', 'else',
  'case', 'default', 'break', 'continue', 'goto', 'throw', 'delete', 'new', 'typeof', '_Alignof', '_Static_assert',
  'static_assert', 'static_cast', 'reinterpret_cast', 'const_cast', 'dynamic_cast', 'catch', 'try', 'operator']);
const DECLARATION_STARTS = new Set(['const', 'static', 'struct', 'unsigned', 'signed', 'auto', 'volatile', 'register',
  'int', 'char', 'long', 'short', 'bool', 'double', 'float', 'void', 'enum', 'union', 'constexpr', 'thread_local']);
const OPERATORS = ['<<=', '>>=', '...', '->*', '->', '++', '--', '<<', '>>', '<=', '>=', '==', '!=', '&&', '||', '+=', '-=',
  '*=', '/=', '%=', '&=', '|=', '^=', '::'];
const RELATIONAL = { '<': ['>=', '<='], '<=': ['>', '<'], '>': ['<=', '>='], '>=': ['<', '>'], '==': ['!='], '!=': ['=='] };

/** The code's tokens; comments, preprocessor lines and whitespace are left out, strings and
 * characters kept as one token each (never mutated). */
export function tokenize(text) {
  const tokens = [];
  let i = 0;
  let lineStart = true;
  while (i < text.length) {
    const c = text[i];
    if (c === '\n') { lineStart = true; i++; continue; }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v') { i++; continue; }
    if (lineStart && c === '#') { // a preprocessor line, with its continuations
      while (i < text.length && text[i] !== '\n') {
        if (text[i] === '\\' && text[i + 1] === '\n') i++;
        else if (text.startsWith('/*', i)) { const end = text.indexOf('*/', i + 2); i = end < 0 ? text.length : end + 1; }
        i++;
      }
      continue;
    }
    lineStart = false;
    if (text.startsWith('//', i)) { while (i < text.length && text[i] !== '\n') i++; continue; }
    if (text.startsWith('/*', i)) { const end = text.indexOf('*/', i + 2); i = end < 0 ? text.length : end + 2; continue; }
    const start = i;
    if (c === '"' || c === '\'') {
      i++;
      while (i < text.length && text[i] !== c) i += text[i] === '\\' ? 2 : 1;
      i++;
      tokens.push({ type: c === '"' ? 'str' : 'char', text: text.slice(start, i), start, end: i });
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      while (i < text.length && /\w/.test(text[i])) i++;
      // a string's prefix (u8"...", L"...") belongs to the string
      if (text[i] === '"' && /^(u8|u|U|L|R)$/.test(text.slice(start, i))) continue;
      tokens.push({ type: 'id', text: text.slice(start, i), start, end: i });
      continue;
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(text[i + 1] ?? ''))) {
      while (i < text.length && /[\w.']/.test(text[i])) {
        if ((text[i] === 'e' || text[i] === 'E' || text[i] === 'p' || text[i] === 'P') && /[+-]/.test(text[i + 1] ?? '') && !/^0[xX]/.test(text.slice(start, i + 1))) i++;
        i++;
      }
      tokens.push({ type: 'num', text: text.slice(start, i), start, end: i });
      continue;
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i)) ?? c;
    i += op.length;
    tokens.push({ type: 'op', text: op, start, end: i });
  }
  return tokens;
}

/** Index of the token that closes the one at `open` ((, [, {). */
function closing(tokens, open) {
  const pair = { '(': ')', '[': ']', '{': '}' }[tokens[open].text];
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    if (tokens[i].text === tokens[open].text) depth++;
    else if (tokens[i].text === pair && --depth === 0) return i;
  }
  return tokens.length - 1;
}

/** The function bodies: [index of {, index of }] at the outermost level a function can have. */
export function functionBodies(tokens) {
  const bodies = [];
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i].text !== '{') continue;
    let j = i - 1;
    while (j >= 0 && ['const', 'override', 'noexcept', 'final', 'mutable'].includes(tokens[j].text)) j--;
    if (j >= 0 && tokens[j].text === ')') {
      const end = closing(tokens, i);
      bodies.push([i, end]);
      i = end;
    }
  }
  return bodies;
}

/** The `<` and `>` of template arguments (std::vector<char*>, static_cast<int>(x)): not relational. */
function templateBrackets(tokens, from, to) {
  const brackets = new Set();
  for (let i = from; i < to; i++) {
    if (tokens[i].text !== '<' || tokens[i - 1]?.type !== 'id' || brackets.has(i)) continue;
    let depth = 0;
    for (let j = i; j < to && j < i + 24; j++) {
      const t = tokens[j];
      if (t.text === '<') depth++;
      else if (t.text === '>' || t.text === '>>') {
        depth -= t.text.length;
        if (depth <= 0) {
          if (depth === 0) for (let k = i; k <= j; k++) if (['<', '>', '>>'].includes(tokens[k].text)) brackets.add(k);
          break;
        }
      } else if (!(t.type === 'id' || t.type === 'num' || ['::', '*', '&', ','].includes(t.text))) break;
    }
  }
  return brackets;
}

/** The top-level parts of tokens (from, to) split at `separators`: [[start, end, separatorIndex]...]. */
function splitTop(tokens, from, to, separators) {
  const parts = [];
  let depth = 0;
  let start = from;
  for (let i = from; i < to; i++) {
    const t = tokens[i].text;
    if (t === '(' || t === '[' || t === '{') depth++;
    else if (t === ')' || t === ']' || t === '}') depth--;
    else if (depth === 0 && separators.includes(t)) { parts.push([start, i, i]); start = i + 1; }
  }
  parts.push([start, to, -1]);
  return parts;
}

/** A statement's end: its `;` at depth 0 (braces of a lambda or an initializer included). */
function statementEnd(tokens, i, to) {
  let depth = 0;
  for (; i < to; i++) {
    const t = tokens[i].text;
    if (t === '(' || t === '[' || t === '{') depth++;
    else if (t === ')' || t === ']' || t === '}') depth--;
    else if (t === ';' && depth === 0) return i;
  }
  return to - 1;
}

/** Whether the statement starting at i declares something (deleting it could only fail to build). */
function isDeclaration(tokens, i) {
  if (DECLARATION_STARTS.has(tokens[i].text)) return true;
  if (tokens[i].type !== 'id' || KEYWORDS.has(tokens[i].text)) return false;
  // Type name [:: Name]* [<...>] [* &]* name
  let j = i + 1;
  while (tokens[j]?.text === '::' && tokens[j + 1]?.type === 'id') j += 2;
  if (tokens[j]?.text === '<') { let d = 0; for (; j < tokens.length; j++) { if (tokens[j].text === '<') d++; else if (tokens[j].text === '>' && --d === 0) break; else if (tokens[j].text === '>>' && (d -= 2) <= 0) break; } j++; }
  while (tokens[j]?.text === '*' || tokens[j]?.text === '&') j++;
  return tokens[j]?.type === 'id' && !KEYWORDS.has(tokens[j].text) && j > i;
}

/** Statements of the block (from, to): [{ start, end (token indexes, inclusive), kind }], nested ones too. */
function statements(tokens, from, to, out = []) {
  let i = from;
  while (i < to) {
    const t = tokens[i];
    if (t.text === ';') { i++; continue; }
    if (t.text === '{') { const end = closing(tokens, i); statements(tokens, i + 1, end, out); out.push({ start: i, end, kind: 'block' }); i = end + 1; continue; }
    if ((t.text === 'case' || t.text === 'default') && t.type === 'id') { while (i < to && tokens[i].text !== ':') i++; i++; continue; }
    if (t.text === 'if' || t.text === 'for' || t.text === 'while' || t.text === 'switch') {
      const close = closing(tokens, i + 1);
      let end = bodyOf(tokens, close + 1, to, out);
      if (t.text === 'if') {
        while (tokens[end + 1]?.text === 'else') end = bodyOf(tokens, end + 2, to, out);
      }
      out.push({ start: i, end, kind: t.text });
      i = end + 1;
      continue;
    }
    if (t.text === 'do') {
      const bodyEnd = bodyOf(tokens, i + 1, to, out);
      const end = statementEnd(tokens, bodyEnd + 1, to);
      out.push({ start: i, end, kind: 'do' });
      i = end + 1;
      continue;
    }
    const end = statementEnd(tokens, i, to);
    out.push({ start: i, end, kind: isDeclaration(tokens, i) ? 'declaration' : t.text === 'return' ? 'return' : 'expression' });
    i = end + 1;
  }
  return out;
}

/** The body statement of an if/for/while/else at i: its last token's index (nested statements added to out). */
function bodyOf(tokens, i, to, out) {
  const before = out.length;
  statementsOne(tokens, i, to, out);
  return out.length > before ? out[out.length - 1].end : i;
}

function statementsOne(tokens, i, to, out) {
  // one statement only: run `statements` over exactly its span
  const t = tokens[i];
  let end;
  if (t.text === '{') end = closing(tokens, i);
  else if (['if', 'for', 'while', 'switch', 'do'].includes(t.text)) {
    const probe = [];
    statements(tokens, i, to, probe);
    const first = probe.find((s) => s.start === i);
    end = first.end;
  } else end = statementEnd(tokens, i, to);
  statements(tokens, i, end + 1, out);
}

function intPlus(text, delta) {
  const m = /^(0[xX][0-9a-fA-F']+|0[0-7']*|[1-9][0-9']*)([uUlL]*)$/.exec(text);
  if (!m) return undefined;
  const digits = m[1].replaceAll('\'', '');
  const value = BigInt(digits.length > 1 && digits[0] === '0' && !/^0[xX]/.test(digits) ? `0o${digits.slice(1)}` : digits) + BigInt(delta);
  if (value < 0n) return `-${-value}${m[2]}`;
  return (/^0[xX]/.test(digits) ? `0x${value.toString(16)}` : value.toString()) + m[2];
}

/** Every mutant of one file's text: { operator, start, end, replacement, line, original }. */
export function mutantsOf(text) {
  const tokens = tokenize(text);
  const out = [];
  const add = (operator, start, end, replacement) => {
    if (text.slice(start, end) === replacement) return;
    out.push({ operator, start, end, replacement, original: text.slice(start, end), line: text.slice(0, start).split('\n').length });
  };
  const span = (a, b) => [tokens[a].start, tokens[b].end];
  for (const [open, close] of functionBodies(tokens)) {
    const templates = templateBrackets(tokens, open + 1, close);
    for (let i = open + 1; i < close; i++) {
      const t = tokens[i];
      if (t.type === 'op' && RELATIONAL[t.text] && !templates.has(i) && tokens[i - 1]?.text !== 'operator') {
        const [flip, shift] = RELATIONAL[t.text];
        add('relational flipped', t.start, t.end, flip);
        if (shift) add('relational shifted', t.start, t.end, shift);
      }
      if (t.text === '&&' || t.text === '||') add('logical swapped', t.start, t.end, t.text === '&&' ? '||' : '&&');
      if (t.type === 'num') {
        for (const d of [1, -1]) {
          const r = intPlus(t.text, d);
          if (r !== undefined) add(`constant ${d > 0 ? '+1' : '-1'}`, t.start, t.end, r);
        }
      }
      if (t.text === 'if' && tokens[i + 1]?.text === '(') {
        const condClose = closing(tokens, i + 1);
        const parts = splitTop(tokens, i + 2, condClose, ['&&', '||']);
        if (parts.length > 1) {
          for (let k = 0; k < parts.length; k++) {
            // the condition without part k and one operator next to it
            const [from, to] = k === 0 ? [parts[0][0], parts[0][2]] : [parts[k - 1][2], parts[k][1] - 1];
            const [s, e] = span(from, to);
            add('condition dropped', s, e, '');
          }
        }
      }
      if (t.type === 'id' && !KEYWORDS.has(t.text) && tokens[i + 1]?.text === '(') {
        const argClose = closing(tokens, i + 1);
        if (argClose === i + 2) continue;
        const args = splitTop(tokens, i + 2, argClose, [',']);
        for (let k = 0; k + 1 < args.length; k++) {
          const [a0, a1] = [args[k][0], args[k][1] - 1];
          const [b0, b1] = [args[k + 1][0], args[k + 1][1] - 1];
          if (a1 < a0 || b1 < b0) continue;
          const a = text.slice(tokens[a0].start, tokens[a1].end);
          const b = text.slice(tokens[b0].start, tokens[b1].end);
          if (a === b) continue;
          add('arguments swapped', tokens[a0].start, tokens[b1].end, b + text.slice(tokens[a1].end, tokens[b0].start) + a);
        }
      }
    }
    for (const s of statements(tokens, open + 1, close)) {
      if (s.kind === 'declaration') continue;
      const [start, end] = span(s.start, s.end);
      add('statement deleted', start, end, s.kind === 'block' ? '{}' : ';');
    }
  }
  // one mutant per change (a nested statement found twice, an if's condition dropped twice)
  const seen = new Set();
  return out.filter((m) => {
    const key = `${m.start}:${m.end}:${m.replacement}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  }).sort((a, b) => a.start - b.start || a.end - b.end || a.replacement.localeCompare(b.replacement));
}

/** A fixed-seed generator (mulberry32): the same seed draws the same sample on every machine. */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` of `items` drawn uniformly without replacement, in their original order. */
export function sample(items, count, seed) {
  if (count >= items.length) return [...items];
  const random = seededRandom(seed);
  const index = items.map((_, i) => i);
  for (let i = index.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [index[i], index[j]] = [index[j], index[i]];
  }
  return index.slice(0, count).sort((a, b) => a - b).map((i) => items[i]);
}
