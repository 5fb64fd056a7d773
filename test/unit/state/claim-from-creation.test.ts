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

  it('from a creation, also requires the machine still alive, pending, uninstanced and as created', () => {
    const update = claim({
      applications: [],
      modelUid: 'uid-1',
      asCreated: { base: 'ubuntu@24.04', constraints: 'mem=4G', placement: 'zone=eu-west-1b' },
    });
    expect(update.ConditionExpression).toBe(
      'attribute_exists(pk) AND #life <> :dead AND #applications = :applications AND ' +
        '#modelUid = :modelUid AND #life = :alive AND #status = :pending AND ' +
        'attribute_not_exists(#instanceId) AND #base = :base AND #constraints = :constraints AND ' +
        '#placement = :placement AND attribute_not_exists(#countedZone)',
    );
    expect(update.ExpressionAttributeNames).toMatchObject({
      '#status': 'status',
      '#instanceId': 'instanceId',
      '#base': 'base',
      '#constraints': 'constraints',
      '#placement': 'placement',
    });
    expect(update.ExpressionAttributeValues).toMatchObject({
      ':alive': 'alive',
      ':pending': 'pending',
      ':base': 'ubuntu@24.04',
      ':constraints': 'mem=4G',
      ':placement': 'zone=eu-west-1b',
    });
  });

  it('from a creation without a placement, requires the machine to have none', () => {
    const update = claim({
      applications: [],
      modelUid: 'uid-1',
      asCreated: { base: 'ubuntu@24.04', constraints: '' },
    });
    expect(update.ConditionExpression).toContain(
      '#constraints = :constraints AND attribute_not_exists(#placement)',
    );
    expect(update.ExpressionAttributeValues).toMatchObject({ ':constraints': '' });
    expect(update.ExpressionAttributeValues).not.toHaveProperty(':placement');
  });

  it('a read view asks none of it: a claim from a read stays as it was', () => {
    const update = claim({ applications: [], modelUid: 'uid-1' });
    for (const name of ['#status', '#instanceId', '#base', '#constraints', '#placement']) {
      expect(update.ExpressionAttributeNames).not.toHaveProperty(name);
    }
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
      asCreated: { base: 'ubuntu@24.04', constraints: 'mem=4G', placement: 'zone=eu-west-1b' },
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
