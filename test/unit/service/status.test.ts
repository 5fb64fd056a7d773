import {
  compareMachineIds,
  compareUnitNames,
  machineView,
  modelPricePerHour,
  unitStatus,
} from '../../../service/status';

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

describe('price in status (issue 14)', () => {
  const machine = (id: string, status: string, pricePerHour?: number) =>
    ({
      id,
      base: 'ubuntu@24.04',
      life: 'alive',
      status,
      message: '',
      constraints: '',
      principals: [],
      containers: [],
      ...(pricePerHour !== undefined ? { pricePerHour } : {}),
    }) as never;

  it('shows a machine’s pricePerHour, and none when it has none', () => {
    expect(machineView(machine('0', 'running', 0.0208))).toMatchObject({ pricePerHour: 0.0208 });
    expect(machineView(machine('1', 'pending'))).not.toHaveProperty('pricePerHour');
  });

  it('sums the running machines’ prices for the model, to 6 decimals', () => {
    expect(
      modelPricePerHour([
        machine('0', 'running', 0.0208),
        machine('1', 'running', 0.0416),
        machine('2', 'running', 0.1),
        machine('3', 'error', 5),
        machine('4', 'stopping', 7),
        machine('5', 'running'),
      ]),
    ).toBe(0.1624);
  });

  it('has no model total when no running machine has a price', () => {
    expect(
      modelPricePerHour([machine('0', 'pending', 1), machine('1', 'running')]),
    ).toBeUndefined();
    expect(modelPricePerHour([])).toBeUndefined();
  });
});
