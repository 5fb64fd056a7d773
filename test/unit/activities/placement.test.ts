import { distributionGroup, groupPopulation } from '../../../activities/placement';
import type { PlacementMachine } from '../../../state/provisioning';

const m = (
  id: string,
  applications: string[],
  where: { zone?: string; zoneClaim?: string } = {},
  life: PlacementMachine['life'] = 'alive',
): PlacementMachine => ({ id, life, applications, ...where });

describe('distribution groups and their zone population', () => {
  const machines: PlacementMachine[] = [
    m('0', ['wordpress'], { zone: 'us-east-1a' }),
    m('1', ['wordpress'], { zoneClaim: 'us-east-1b' }),
    m('2', ['wordpress', 'telegraf-host'], { zone: 'us-east-1b' }),
    m('3', ['mysql'], { zone: 'us-east-1a' }),
    m('4', [], { zone: 'us-east-1c' }),
    m('5', [], { zoneClaim: 'us-east-1c' }),
    m('6', ['wordpress'], { zone: 'us-east-1c' }, 'dead'),
    m('7', ['wordpress']),
  ];

  it('groups machines sharing any application, leaving out itself and Dead machines', () => {
    expect(
      distributionGroup(machines, { id: '7', applications: ['wordpress'] }).map((x) => x.id),
    ).toEqual(['0', '1', '2']);
    expect(
      distributionGroup(machines, { id: '9', applications: ['mysql', 'telegraf-host'] }).map(
        (x) => x.id,
      ),
    ).toEqual(['2', '3']);
  });

  it('groups a machine without applications with the others without', () => {
    expect(distributionGroup(machines, { id: '4', applications: [] }).map((x) => x.id)).toEqual([
      '5',
    ]);
  });

  it('counts each machine in its zone, or the zone it has claimed', () => {
    expect(groupPopulation(machines, { id: '7', applications: ['wordpress'] })).toEqual({
      'us-east-1a': 1,
      'us-east-1b': 2,
    });
    expect(groupPopulation(machines, { id: '9', applications: [] })).toEqual({ 'us-east-1c': 2 });
  });
});
