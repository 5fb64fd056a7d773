import { fromCreation } from '../../../activities/records';
import { machineClaimItem } from '../../../state/zone-count-items';

/**
 * A claim made from what the creating request wrote (issue 26): its write
 * holds everything the creation said (the model's uid among it), so it can
 * never land on another machine under the same key.
 */
describe('a machine claim conditional on its creation', () => {
  const claim = (m: Parameters<typeof machineClaimItem>[3]['m']) =>
    machineClaimItem('t', 'm', '3', { m, zone: 'z1', partition: undefined, groups: [], now: 'now' })
      .Update!;

  it("names the model's uid in the condition when the view has one", () => {
    const update = claim({ applications: [], modelUid: 'uid-1' });
    expect(update.ConditionExpression).toBe(
      'attribute_exists(pk) AND #life <> :dead AND #applications = :applications AND ' +
        '#modelUid = :modelUid AND attribute_not_exists(#countedZone)',
    );
    expect(update.ExpressionAttributeNames).toMatchObject({ '#modelUid': 'modelUid' });
    expect(update.ExpressionAttributeValues).toMatchObject({ ':modelUid': 'uid-1' });
  });

  it('leaves it out for a machine that records none (created before, or otherwise)', () => {
    const update = claim({ applications: ['web'] });
    expect(update.ConditionExpression).not.toContain('modelUid');
    expect(update.ExpressionAttributeNames).not.toHaveProperty('#modelUid');
  });

  it('the view, machine and model made from the creation say only what it wrote', () => {
    const made = fromCreation(
      { model: 'm', machineId: '3' },
      {
        modelUid: 'uid-1',
        region: 'eu-west-1',
        availabilitySets: true,
        base: 'ubuntu@24.04',
        constraints: 'mem=4G',
        placement: 'zone=eu-west-1b',
        applications: ['web'],
      },
    );
    expect(made.view).toEqual({
      exists: true,
      life: 'alive',
      applications: ['web'],
      modelUid: 'uid-1',
    });
    expect(made.model).toEqual({
      name: 'm',
      uid: 'uid-1',
      region: 'eu-west-1',
      availabilitySets: true,
    });
    expect(made.machine).toMatchObject({
      model: 'm',
      id: '3',
      base: 'ubuntu@24.04',
      constraints: 'mem=4G',
      placement: 'zone=eu-west-1b',
      applications: ['web'],
      life: 'alive',
      status: 'pending',
      modelUid: 'uid-1',
    });
  });
});
