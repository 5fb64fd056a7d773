import { compareStrings, goQuote, goTrimSpace, levenshtein } from '../../../core/text';

describe('Go formatting helpers', () => {
  test.each<[string, string]>([
    ['cheese', '"cheese"'],
    ['', '""'],
    ['say "hi"', '"say \\"hi\\""'],
    ['back\\slash', '"back\\\\slash"'],
    ['tab\there', '"tab\\there"'],
    ['\u0000\u0001\u007f', '"\\x00\\x01\\x7f"'],
    ['\u0007\b\f\n\r\v', '"\\a\\b\\f\\n\\r\\v"'],
    ['nb\u00a0sp', '"nb\\u00a0sp"'],
    ['é 😀 日本', '"é 😀 日本"'],
    ['\u200b', '"\\u200b"'],
    ['\u{10ffff}', '"\\U0010ffff"'],
    ['\ud800', '"\\ud800"'],
  ])('goQuote(%j) is %s, as Go’s %%q', (input, quoted) => {
    expect(goQuote(input)).toBe(quoted);
  });

  test('goTrimSpace trims what Go’s strings.TrimSpace trims', () => {
    expect(goTrimSpace(' \t\n\v\f\r\u0085\u00a0\u2000\u3000x y\u2028\u2029\u202f\u205f ')).toBe(
      'x y',
    );
    expect(goTrimSpace('\u200bx\ufeff')).toBe('\u200bx\ufeff');
  });

  test('compareStrings orders by code point', () => {
    expect(['b', 'B', 'a', '\u{1f600}', '\uffff'].sort(compareStrings)).toStrictEqual([
      'B',
      'a',
      'b',
      '\uffff',
      '\u{1f600}',
    ]);
    expect(compareStrings('a', 'ab')).toBeLessThan(0);
    expect(compareStrings('ab', 'ab')).toBe(0);
  });

  test('levenshtein', () => {
    expect(levenshtein('', '')).toBe(0);
    expect(levenshtein('ba', 'bar')).toBe(1);
    expect(levenshtein('kitten', 'sitting')).toBe(3);
    expect(levenshtein('😀a', 'a')).toBe(1);
  });
});
