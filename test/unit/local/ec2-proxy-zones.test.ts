import {
  filterLimitRefusal,
  filterValueMatches,
  takeFilters,
} from '../../../local/ec2-proxy/query';
import { rewriteAvailabilityZones } from '../../../local/ec2-proxy/zones';

// moto 5.2.5's answer to DescribeAvailabilityZones in us-east-1 (three of its six zones).
const MOTO_ZONES =
  '<?xml version="1.0" encoding="utf-8"?>\n' +
  '<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15"><availabilityZoneInfo>' +
  '<item><messageSet/><regionName>us-east-1</regionName><zoneName>us-east-1a</zoneName><zoneId>use1-az6</zoneId><zoneType>availability-zone</zoneType><zoneState>available</zoneState></item>' +
  '<item><messageSet/><regionName>us-east-1</regionName><zoneName>us-east-1b</zoneName><zoneId>use1-az1</zoneId><zoneType>availability-zone</zoneType><zoneState>available</zoneState></item>' +
  '<item><messageSet/><regionName>us-east-1</regionName><zoneName>us-east-1c</zoneName><zoneId>use1-az2</zoneId><zoneType>availability-zone</zoneType><zoneState>available</zoneState></item>' +
  '</availabilityZoneInfo><requestId>request-id</requestId></DescribeAvailabilityZonesResponse>';

function zones(xml: string): string[] {
  return [
    ...xml.matchAll(
      /<zoneName>([^<]+)<\/zoneName><zoneId>[^<]+<\/zoneId><zoneType>[^<]+<\/zoneType><zoneState>([^<]+)<\/zoneState>/g,
    ),
  ].map((m) => `${m[1]}:${m[2]}`);
}

describe('rewriteAvailabilityZones', () => {
  it('leaves the answer byte-identical with no zone states and no filters', () => {
    expect(rewriteAvailabilityZones(MOTO_ZONES, {}, [])).toBe(MOTO_ZONES);
  });

  it('rewrites the state of the zones named, and only those', () => {
    const out = rewriteAvailabilityZones(MOTO_ZONES, { 'us-east-1c': 'impaired' }, []);
    expect(zones(out)).toEqual([
      'us-east-1a:available',
      'us-east-1b:available',
      'us-east-1c:impaired',
    ]);
    expect(out.replace('impaired', 'available')).toBe(MOTO_ZONES);
  });

  it('applies a state filter to the rewritten states', () => {
    const states = { 'us-east-1c': 'impaired' } as const;
    expect(
      zones(
        rewriteAvailabilityZones(MOTO_ZONES, states, [{ name: 'state', values: ['available'] }]),
      ),
    ).toEqual(['us-east-1a:available', 'us-east-1b:available']);
    expect(
      zones(
        rewriteAvailabilityZones(MOTO_ZONES, states, [{ name: 'state', values: ['impaired'] }]),
      ),
    ).toEqual(['us-east-1c:impaired']);
  });

  it('ORs the values of one filter and ANDs filters, wildcards included', () => {
    const states = { 'us-east-1b': 'unavailable', 'us-east-1c': 'impaired' } as const;
    expect(
      zones(
        rewriteAvailabilityZones(MOTO_ZONES, states, [
          { name: 'zone-state', values: ['impaired', 'unavailable'] },
        ]),
      ),
    ).toEqual(['us-east-1b:unavailable', 'us-east-1c:impaired']);
    expect(
      zones(
        rewriteAvailabilityZones(MOTO_ZONES, states, [
          { name: 'state', values: ['*a*'] },
          { name: 'zone-state', values: ['?mpaired'] },
        ]),
      ),
    ).toEqual(['us-east-1c:impaired']);
  });

  it('a filter without values matches nothing', () => {
    expect(
      zones(rewriteAvailabilityZones(MOTO_ZONES, {}, [{ name: 'state', values: [] }])),
    ).toEqual([]);
  });

  it('keeps the rest of the document intact when removing zones', () => {
    const out = rewriteAvailabilityZones(MOTO_ZONES, { 'us-east-1a': 'impaired' }, [
      { name: 'state', values: ['available'] },
    ]);
    expect(out).toMatch(
      /^<\?xml version="1.0" encoding="utf-8"\?>\n<DescribeAvailabilityZonesResponse /,
    );
    expect(out).toContain(
      '<availabilityZoneInfo><item><messageSet/><regionName>us-east-1</regionName><zoneName>us-east-1b<',
    );
    expect(out).toMatch(
      /<\/item><\/availabilityZoneInfo><requestId>request-id<\/requestId><\/DescribeAvailabilityZonesResponse>$/,
    );
  });
});

describe('takeFilters', () => {
  it('takes the named filters out and renumbers the rest from 1', () => {
    const { taken, rest } = takeFilters(
      [
        ['Action', 'DescribeAvailabilityZones'],
        ['Filter.1.Name', 'state'],
        ['Filter.1.Value.1', 'available'],
        ['Filter.2.Name', 'region-name'],
        ['Filter.2.Value.1', 'us-east-1'],
        ['Filter.2.Value.2', 'us-west-2'],
        ['Filter.3.Name', 'zone-state'],
        ['Filter.3.Value.2', 'impaired'],
        ['Filter.3.Value.1', 'constrained'],
        ['Version', '2016-11-15'],
      ],
      new Set(['state', 'zone-state']),
    );
    expect(taken).toEqual([
      { name: 'state', values: ['available'] },
      { name: 'zone-state', values: ['constrained', 'impaired'] },
    ]);
    expect(rest).toEqual([
      ['Action', 'DescribeAvailabilityZones'],
      ['Version', '2016-11-15'],
      ['Filter.1.Name', 'region-name'],
      ['Filter.1.Value.1', 'us-east-1'],
      ['Filter.1.Value.2', 'us-west-2'],
    ]);
  });

  it('returns the parameters unchanged when no filter is taken', () => {
    const params: Array<[string, string]> = [
      ['Action', 'DescribeAvailabilityZones'],
      ['ZoneName.1', 'us-east-1a'],
    ];
    expect(takeFilters(params, new Set(['state']))).toEqual({ taken: [], rest: params });
  });
});

describe('filterValueMatches', () => {
  it.each<[string, string, boolean]>([
    ['available', 'available', true],
    ['available', 'Available', false],
    ['avail*', 'available', true],
    ['*', '', true],
    ['im?aired', 'impaired', true],
    ['im?aired', 'imaired', false],
    ['a.b', 'axb', false],
    ['(x)', '(x)', true],
  ])('%s against %s → %s', (pattern, value, expected) => {
    expect(filterValueMatches(pattern, value)).toBe(expected);
  });
});

describe('filterLimitRefusal: EC2 takes 200 filter values per call', () => {
  const call = (n: number, second = 0): Array<[string, string]> => [
    ['Action', 'DescribeInstances'],
    ['Filter.1.Name', 'instance-id'],
    ...Array.from({ length: n }, (_, i): [string, string] => [`Filter.1.Value.${i + 1}`, `i-${i}`]),
    ...(second > 0 ? [['Filter.2.Name', 'instance-state-name'] as [string, string]] : []),
    ...Array.from({ length: second }, (_, i): [string, string] => [
      `Filter.2.Value.${i + 1}`,
      'running',
    ]),
  ];
  it('takes 200 values', () => {
    expect(filterLimitRefusal(call(200))).toBeUndefined();
  });
  it('refuses 201 values, in one filter or across filters, with EC2’s wording', () => {
    const refusal = 'The maximum number of filter values specified on a single call is 200';
    expect(filterLimitRefusal(call(201))).toBe(refusal);
    expect(filterLimitRefusal(call(199, 2))).toBe(refusal);
  });
});
