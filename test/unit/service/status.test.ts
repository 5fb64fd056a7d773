import { compareMachineIds, compareUnitNames, unitStatus } from '../../../service/status';

describe('ordering in status', () => {
  it('orders machine ids numerically by segment', () => {
    expect(['10', '2', '1/lxd/10', '1', '1/lxd/2', '0'].sort(compareMachineIds)).toEqual([
      '0',
      '1',
      '1/lxd/2',
      '1/lxd/10',
      '2',
      '10',
    ]);
  });

  it('orders unit names by application then number', () => {
    expect(['b/1', 'a/10', 'a/2', 'a-b/0'].sort(compareUnitNames)).toEqual([
      'a/2',
      'a/10',
      'a-b/0',
      'b/1',
    ]);
  });
});

describe('unit status', () => {
  it.each([
    ['running', 'deployed'],
    ['error', 'error'],
    ['pending', 'allocating'],
    ['allocating', 'allocating'],
    ['stopping', 'allocating'],
  ] as const)('follows a %s machine as %s', (machine, unit) => {
    expect(unitStatus({ status: machine } as never)).toBe(unit);
  });

  it('is allocating without a machine', () => {
    expect(unitStatus(undefined)).toBe('allocating');
  });
});
