/**
 * Small string helpers that reproduce Go's formatting, so that messages read
 * exactly as Juju's do (Juju formats with `%q` and trims with
 * `strings.TrimSpace`). Internal to core/.
 */

// Go's unicode.IsSpace: the Latin-1 spaces plus Unicode's White_Space property.
const GO_SPACE: ReadonlySet<number> = new Set<number>([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
  0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

/** Go's strings.TrimSpace. */
export function goTrimSpace(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && GO_SPACE.has(s.charCodeAt(start))) start++;
  while (end > start && GO_SPACE.has(s.charCodeAt(end - 1))) end--;
  return s.slice(start, end);
}

// Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and ASCII space.
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

const SHORT_ESCAPES: Readonly<Record<number, string>> = {
  0x07: '\\a',
  0x08: '\\b',
  0x0c: '\\f',
  0x0a: '\\n',
  0x0d: '\\r',
  0x09: '\\t',
  0x0b: '\\v',
};

function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, '0');
}

/** Go's `%q` (strconv.Quote) for a string. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    if (ch === '"' || ch === '\\') {
      out += '\\' + ch;
    } else if (cp >= 0xd800 && cp <= 0xdfff) {
      // A lone surrogate cannot be UTF-8; show it escaped rather than mangled.
      out += '\\u' + hex(cp, 4);
    } else if (PRINTABLE.test(ch)) {
      out += ch;
    } else if (SHORT_ESCAPES[cp] !== undefined) {
      out += SHORT_ESCAPES[cp];
    } else if (cp < 0x20 || cp === 0x7f) {
      out += '\\x' + hex(cp, 2);
    } else if (cp < 0x10000) {
      out += '\\u' + hex(cp, 4);
    } else {
      out += '\\U' + hex(cp, 8);
    }
  }
  return out + '"';
}

/**
 * Orders strings by code point, as Go compares strings (byte-wise UTF-8),
 * rather than by UTF-16 unit or locale.
 */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const ca = ia.next();
    const cb = ib.next();
    if (ca.done === true) return cb.done === true ? 0 : -1;
    if (cb.done === true) return 1;
    const pa = ca.value.codePointAt(0) ?? 0;
    const pb = cb.value.codePointAt(0) ?? 0;
    if (pa !== pb) return pa < pb ? -1 : 1;
  }
}

/** Levenshtein distance between two strings, counted in code points. */
export function levenshtein(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const current = [i];
    for (let j = 1; j <= y.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (x[i - 1] === y[j - 1] ? 0 : 1);
      const deletion = (previous[j] ?? 0) + 1;
      const insertion = (current[j - 1] ?? 0) + 1;
      current.push(Math.min(substitution, deletion, insertion));
    }
    previous = current;
  }
  return previous[y.length] ?? 0;
}
