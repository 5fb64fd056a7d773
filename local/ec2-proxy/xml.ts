/**
 * A tiny XML reader for EC2 Query-protocol answers (moto's and AWS's): elements,
 * attributes ignored, no DTDs. It keeps every element's source offsets so callers
 * can rewrite a document by splicing the original text, leaving the rest of the
 * bytes exactly as moto wrote them.
 */

export interface XmlElement {
  /** Local name (any `prefix:` dropped). */
  readonly name: string;
  /** Offset of `<` of the start tag. */
  readonly start: number;
  /** Offset just past the end tag (or past `/>`). */
  readonly end: number;
  /** Offset just past the start tag. */
  readonly innerStart: number;
  /** Offset of `<` of the end tag (equals innerStart for `<x/>`). */
  readonly innerEnd: number;
  readonly children: readonly XmlElement[];
}

export class XmlParseError extends Error {
  override readonly name = 'XmlParseError';
}

interface MutableElement {
  name: string;
  start: number;
  end: number;
  innerStart: number;
  innerEnd: number;
  children: MutableElement[];
}

// A tag, a declaration/processing instruction, a comment or a CDATA section.
const TOKEN =
  /<(\/?)([A-Za-z_][\w.:-]*)((?:[^>"']|"[^"]*"|'[^']*')*?)(\/?)>|<\?[\s\S]*?\?>|<!--[\s\S]*?-->|<!\[CDATA\[[\s\S]*?\]\]>/g;

function localName(qualified: string): string {
  const colon = qualified.indexOf(':');
  return colon === -1 ? qualified : qualified.slice(colon + 1);
}

/** Parses a document and returns its root element. */
export function parseXml(xml: string): XmlElement {
  const stack: MutableElement[] = [];
  let root: MutableElement | undefined;
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(xml); m !== null; m = TOKEN.exec(xml)) {
    const [token, closing, qualified, , selfClosing] = m;
    if (qualified === undefined) continue; // declaration, comment or CDATA
    const name = localName(qualified);
    const start = m.index;
    const after = start + token.length;
    if (closing) {
      const open = stack.pop();
      if (!open || open.name !== name) {
        throw new XmlParseError(`unexpected </${qualified}> at offset ${start}`);
      }
      open.innerEnd = start;
      open.end = after;
      continue;
    }
    const element: MutableElement = {
      name,
      start,
      end: after,
      innerStart: after,
      innerEnd: after,
      children: [],
    };
    const parent = stack[stack.length - 1];
    if (parent) parent.children.push(element);
    else if (root) throw new XmlParseError(`second root element <${qualified}> at offset ${start}`);
    else root = element;
    if (!selfClosing) stack.push(element);
  }
  const unclosed = stack[stack.length - 1];
  if (unclosed) throw new XmlParseError(`<${unclosed.name}> is never closed`);
  if (!root) throw new XmlParseError('no root element');
  return root;
}

export function childElements(parent: XmlElement, name: string): XmlElement[] {
  return parent.children.filter((c) => c.name === name);
}

export function childElement(parent: XmlElement, name: string): XmlElement | undefined {
  return parent.children.find((c) => c.name === name);
}

/** Follows a path of child names (`a`, `b`, …) from `parent`; undefined when any step is missing. */
export function descendant(parent: XmlElement, ...path: string[]): XmlElement | undefined {
  let current: XmlElement | undefined = parent;
  for (const name of path) {
    if (!current) return undefined;
    current = childElement(current, name);
  }
  return current;
}

/** The element's text content, entities decoded (meant for leaf elements). */
export function elementText(xml: string, element: XmlElement): string {
  return unescapeXml(xml.slice(element.innerStart, element.innerEnd));
}

export function childText(xml: string, parent: XmlElement, name: string): string | undefined {
  const child = childElement(parent, name);
  return child ? elementText(xml, child) : undefined;
}

export function innerXml(xml: string, element: XmlElement): string {
  return xml.slice(element.innerStart, element.innerEnd);
}

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
};

export function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (entity, body: string) => {
    if (body.startsWith('#x')) return String.fromCodePoint(parseInt(body.slice(2), 16));
    if (body.startsWith('#')) return String.fromCodePoint(parseInt(body.slice(1), 10));
    return NAMED_ENTITIES[body] ?? entity;
  });
}

/** Replace `[start, end)` of a document with `text`. */
export interface Splice {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** Applies non-overlapping splices (in any order) to `xml`. */
export function applySplices(xml: string, splices: readonly Splice[]): string {
  const ordered = [...splices].sort((a, b) => b.start - a.start);
  let out = xml;
  let limit = Infinity;
  for (const s of ordered) {
    if (s.end > limit) throw new Error('overlapping XML splices');
    out = out.slice(0, s.start) + s.text + out.slice(s.end);
    limit = s.start;
  }
  return out;
}
