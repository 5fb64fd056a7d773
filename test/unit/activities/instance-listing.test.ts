import type { Instance } from '@aws-sdk/client-ec2';
import { SharedListings, deploymentListing } from '../../../ec2/instance-listing';
import { TAG_MACHINE, TAG_MODEL, TAG_MODEL_UID } from '../../../ec2/tags';

function instance(
  id: string,
  state: string,
  tags: Record<string, string>,
  launchedAt = 0,
): Instance {
  return {
    InstanceId: id,
    State: { Name: state as never },
    LaunchTime: new Date(launchedAt),
    Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
  };
}

describe('deploymentListing', () => {
  const listing = deploymentListing(
    [
      instance(
        'i-b',
        'running',
        { [TAG_MODEL]: 'web', [TAG_MODEL_UID]: 'u2', [TAG_MACHINE]: '1' },
        20,
      ),
      instance(
        'i-a',
        'terminated',
        { [TAG_MODEL]: 'web', [TAG_MODEL_UID]: 'u1', [TAG_MACHINE]: '0' },
        10,
      ),
      instance('i-c', 'pending', { [TAG_MODEL]: 'db', [TAG_MACHINE]: '0' }, 5),
      instance('i-d', 'stopped', { Name: 'not ours by model' }, 1),
    ],
    1234,
  );

  it('selects a model’s instances oldest first, as EC2’s tag filters would', () => {
    expect(listing.tagged('web').map((i) => i.InstanceId)).toEqual(['i-a', 'i-b']);
    expect(listing.tagged('db').map((i) => i.InstanceId)).toEqual(['i-c']);
    expect(listing.tagged('cache')).toEqual([]);
  });

  it('tells a re-created model’s instances from the old model’s by uid', () => {
    expect(listing.tagged('web', 'u2').map((i) => i.InstanceId)).toEqual(['i-b']);
    expect(listing.tagged('web', 'u1').map((i) => i.InstanceId)).toEqual(['i-a']);
    // an instance without the uid tag is not the uid's
    expect(listing.tagged('db', 'u9')).toEqual([]);
  });

  it('knows the state of every instance it holds, tagged for a model or not', () => {
    expect(Object.fromEntries(listing.states)).toEqual({
      'i-a': 'terminated',
      'i-b': 'running',
      'i-c': 'pending',
      'i-d': 'stopped',
    });
    expect(listing.at).toBe(1234);
  });
});

describe('SharedListings', () => {
  function harness() {
    let clock = 0;
    const calls: string[] = [];
    let fail = false;
    const listings = new SharedListings(
      (region) => {
        calls.push(region);
        if (fail) return Promise.reject(new Error('RequestLimitExceeded'));
        return Promise.resolve([instance(`i-${calls.length}`, 'running', { [TAG_MODEL]: 'm' })]);
      },
      10_000,
      () => clock,
    );
    return {
      listings,
      calls,
      advance: (ms: number) => (clock += ms),
      failing: (v: boolean) => (fail = v),
    };
  }

  it('serves one listing per region to every model that asks within its age', async () => {
    const h = harness();
    const [a, b] = await Promise.all([h.listings.of('us-east-1'), h.listings.of('us-east-1')]);
    expect(a).toBe(b);
    h.advance(10_000);
    expect(await h.listings.of('us-east-1')).toBe(a);
    await h.listings.of('eu-west-1');
    expect(h.calls).toEqual(['us-east-1', 'eu-west-1']);
  });

  it('asks again once the listing is older than its age', async () => {
    const h = harness();
    const first = await h.listings.of('us-east-1');
    h.advance(10_001);
    const second = await h.listings.of('us-east-1');
    expect(second).not.toBe(first);
    expect(second.tagged('m').map((i) => i.InstanceId)).toEqual(['i-2']);
    expect(second.at).toBe(10_001);
    expect(h.calls).toEqual(['us-east-1', 'us-east-1']);
  });

  it('answers with a failed listing for a few seconds, then asks again', async () => {
    const h = harness();
    h.failing(true);
    await expect(h.listings.of('us-east-1')).rejects.toThrow('RequestLimitExceeded');
    await Promise.resolve();
    h.failing(false);
    h.advance(5_000);
    // within the hold: the same failure, no new listing
    await expect(h.listings.of('us-east-1')).rejects.toThrow('RequestLimitExceeded');
    expect(h.calls).toHaveLength(1);
    h.advance(1);
    const next = await h.listings.of('us-east-1');
    expect(next.tagged('m').map((i) => i.InstanceId)).toEqual(['i-2']);
    expect(h.calls).toHaveLength(2);
  });
});
