import { DescribeRegionsCommand } from '@aws-sdk/client-ec2';
import { DependencyUnavailableError } from '../../../service/errors';
import { Ec2Regions } from '../../../service/regions';

function fakeEc2(answers: Array<() => Promise<unknown>>) {
  const calls: unknown[] = [];
  return {
    calls,
    send: (command: unknown) => {
      calls.push(command);
      const next = answers.shift();
      if (!next) throw new Error('no more answers');
      return next();
    },
  };
}

describe('Ec2Regions', () => {
  it('lists the regions EC2 offers and asks again only after an hour', async () => {
    let now = 0;
    const ec2 = fakeEc2([
      () =>
        Promise.resolve({ Regions: [{ RegionName: 'us-east-1' }, { RegionName: 'eu-west-1' }] }),
      () => Promise.resolve({ Regions: [{ RegionName: 'us-east-1' }] }),
    ]);
    const regions = new Ec2Regions(ec2 as never, () => now);
    expect([...(await regions.offered())]).toEqual(['us-east-1', 'eu-west-1']);
    now = 59 * 60 * 1000;
    expect((await regions.offered()).has('eu-west-1')).toBe(true);
    expect(ec2.calls).toHaveLength(1);
    expect(ec2.calls[0]).toBeInstanceOf(DescribeRegionsCommand);
    now = 61 * 60 * 1000;
    expect((await regions.offered()).has('eu-west-1')).toBe(false);
    expect(ec2.calls).toHaveLength(2);
  });

  it('answers 503 unavailable when EC2 cannot be asked, and asks again next time', async () => {
    const down = Object.assign(new Error('connect ECONNREFUSED'), { name: 'TimeoutError' });
    const ec2 = fakeEc2([
      () => Promise.reject(down),
      () => Promise.resolve({ Regions: [{ RegionName: 'us-east-1' }] }),
    ]);
    const regions = new Ec2Regions(ec2 as never);
    const failure = await regions.offered().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(DependencyUnavailableError);
    // functions/http.ts answers this code with 503
    expect(failure).toMatchObject({
      code: 'unavailable',
      message: 'cannot check the region: EC2 could not be asked (TimeoutError)',
    });
    expect((await regions.offered()).has('us-east-1')).toBe(true);
  });
});
