import {
  applySplices,
  childElements,
  childText,
  descendant,
  escapeXml,
  parseXml,
  unescapeXml,
  XmlParseError,
} from '../../../local/ec2-proxy/xml';

describe('parseXml', () => {
  const doc =
    '<?xml version="1.0" encoding="utf-8"?>\n' +
    '<!-- c --><R xmlns="urn:x" a=\'>\'><set><item><id>1</id><set><item><id>inner</id></item></set></item>' +
    '<item><id>2 &amp; &lt;3&gt; &#65;&#x42;</id></item><empty/></set></R>';

  it('nests same-named elements correctly and keeps offsets', () => {
    const root = parseXml(doc);
    expect(root.name).toBe('R');
    const set = descendant(root, 'set');
    const items = childElements(set!, 'item');
    expect(items.map((i) => childText(doc, i, 'id'))).toEqual(['1', '2 & <3> AB']);
    expect(doc.slice(items[0]!.start, items[0]!.end)).toBe(
      '<item><id>1</id><set><item><id>inner</id></item></set></item>',
    );
    const empty = childElements(set!, 'empty')[0]!;
    expect(doc.slice(empty.start, empty.end)).toBe('<empty/>');
    expect(empty.innerStart).toBe(empty.innerEnd);
  });

  it('drops namespace prefixes from names', () => {
    expect(parseXml('<soap:Envelope><soap:Body/></soap:Envelope>').children[0]!.name).toBe('Body');
  });

  it.each([
    ['<a><b></a>', /unexpected <\/a>/],
    ['<a>', /never closed/],
    ['<a/><b/>', /second root/],
    ['just text', /no root/],
  ])('refuses %s', (xml, message) => {
    expect(() => parseXml(xml)).toThrow(XmlParseError);
    expect(() => parseXml(xml)).toThrow(message);
  });
});

describe('escaping', () => {
  it('round-trips', () => {
    const text = `a<b>&"c'`;
    expect(escapeXml(text)).toBe('a&lt;b&gt;&amp;&quot;c&apos;');
    expect(unescapeXml(escapeXml(text))).toBe(text);
  });

  it('leaves unknown entities alone', () => {
    expect(unescapeXml('&nbsp;')).toBe('&nbsp;');
  });
});

describe('applySplices', () => {
  it('applies splices given in any order', () => {
    expect(
      applySplices('0123456789', [
        { start: 1, end: 2, text: 'a' },
        { start: 8, end: 10, text: '' },
        { start: 4, end: 4, text: 'X' },
      ]),
    ).toBe('0a23X4567');
  });

  it('refuses overlapping splices', () => {
    expect(() =>
      applySplices('0123', [
        { start: 0, end: 2, text: '' },
        { start: 1, end: 3, text: '' },
      ]),
    ).toThrow(/overlapping/);
  });
});
