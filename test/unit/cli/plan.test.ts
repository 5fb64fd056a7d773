import { formatPlan, inWords, type Plan } from '../../../cli/plan';

const plan: Plan = {
  machines: [
    {
      id: null,
      units: ['web/0'],
      base: 'ubuntu@22.04',
      constraints: 'mem=2048M',
      zone: 'us-east-1a',
      instanceType: 't3.small',
      pricePerHour: 0.0208,
    },
    {
      id: '3',
      units: ['web/1'],
      base: 'ubuntu@22.04',
      constraints: 'mem=2048M',
      zone: 'us-east-1b',
      instanceType: 't3.small',
      pricePerHour: 0.0208,
    },
    {
      id: null,
      units: [],
      base: 'ubuntu@22.04',
      constraints: '',
      zone: 'us-east-1b',
      instanceType: null,
      pricePerHour: 0,
    },
  ],
  pricePerHour: 0.0208,
  pricePerMonth: 15.18,
  estimatedSeconds: 125,
  notes: ['machine 3 exists: its cost is not added to the totals'],
};

describe('formatPlan', () => {
  it('prints the machines, the totals, when the last one launches, and the notes', () => {
    expect(formatPlan(plan)).toBe(
      [
        'Machine  Units  Zone        Type             $/h',
        'new      web/0  us-east-1a  t3.small     $0.0208',
        '3        web/1  us-east-1b  t3.small     $0.0208',
        'new      -      us-east-1b  (container)  $0.0000',
        '',
        'Total: $0.0208/h, $15.18/month',
        'Last machine launched in about 2 min 5 s',
        '',
        'Notes:',
        '- machine 3 exists: its cost is not added to the totals',
        '',
      ].join('\n'),
    );
  });

  it('says unknown when prices are', () => {
    const out = formatPlan({
      ...plan,
      machines: [{ ...plan.machines[0]!, pricePerHour: null }],
      pricePerHour: null,
      pricePerMonth: null,
      notes: [],
    });
    expect(out).toContain('us-east-1a  t3.small  unknown');
    expect(out).toContain('Total: unknown/h, unknown/month');
    expect(out).not.toContain('Notes:');
  });
});

describe('inWords', () => {
  it.each([
    [0, '0 s'],
    [4, '4 s'],
    [60, '1 min'],
    [103, '1 min 43 s'],
  ])('%i → %s', (s, words) => {
    expect(inWords(s)).toBe(words);
  });
});
