import { motoStateFilter, withFilter } from '../../../local/ec2-proxy/instances';

describe('the instance-state-name filter handed to moto as well', () => {
  it('asks moto for the states asked, plus running when pending is asked (the proxy reports moto’s running as pending a while)', () => {
    const live = ['pending', 'running', 'stopping', 'stopped', 'shutting-down'];
    expect(motoStateFilter([{ name: 'instance-state-name', values: live }])).toEqual({
      name: 'instance-state-name',
      values: live,
    });
    expect(
      motoStateFilter([
        { name: 'placement-group-name', values: ['g'] },
        { name: 'instance-state-name', values: ['pending'] },
      ]),
    ).toEqual({ name: 'instance-state-name', values: ['pending', 'running'] });
    expect(motoStateFilter([{ name: 'instance-state-name', values: ['terminated'] }])).toEqual({
      name: 'instance-state-name',
      values: ['terminated'],
    });
  });

  it('hands moto nothing for a wildcard, no values, two state filters or none: the proxy alone filters, as before', () => {
    expect(motoStateFilter([{ name: 'instance-state-name', values: ['run*'] }])).toBeUndefined();
    expect(motoStateFilter([{ name: 'instance-state-name', values: ['pendin?'] }])).toBeUndefined();
    expect(motoStateFilter([{ name: 'instance-state-name', values: [] }])).toBeUndefined();
    expect(
      motoStateFilter([
        { name: 'instance-state-name', values: ['running'] },
        { name: 'instance-state-name', values: ['pending'] },
      ]),
    ).toBeUndefined();
    expect(motoStateFilter([{ name: 'placement-group-name', values: ['g'] }])).toBeUndefined();
    expect(motoStateFilter([])).toBeUndefined();
  });

  it('adds the filter after the request’s last filter, numbered on without a gap', () => {
    expect(
      withFilter(
        [
          ['Action', 'DescribeInstances'],
          ['Filter.1.Name', 'tag:provisioner:model'],
          ['Filter.1.Value.1', 'big'],
          ['Filter.2.Name', 'tag:provisioner:deployment'],
          ['Filter.2.Value.1', 'dev'],
          ['MaxResults', '1000'],
        ],
        { name: 'instance-state-name', values: ['pending', 'running'] },
      ),
    ).toEqual([
      ['Action', 'DescribeInstances'],
      ['Filter.1.Name', 'tag:provisioner:model'],
      ['Filter.1.Value.1', 'big'],
      ['Filter.2.Name', 'tag:provisioner:deployment'],
      ['Filter.2.Value.1', 'dev'],
      ['MaxResults', '1000'],
      ['Filter.3.Name', 'instance-state-name'],
      ['Filter.3.Value.1', 'pending'],
      ['Filter.3.Value.2', 'running'],
    ]);
    expect(withFilter([['Action', 'DescribeInstances']], { name: 'n', values: ['v'] })).toEqual([
      ['Action', 'DescribeInstances'],
      ['Filter.1.Name', 'n'],
      ['Filter.1.Value.1', 'v'],
    ]);
  });
});
