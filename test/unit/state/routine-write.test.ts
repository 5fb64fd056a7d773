import {
  deadInstanceWrite,
  ROUTINE_WRITE_ATTRIBUTES,
  routineInstanceWrite,
} from '../../../state/provisioning';

const NEWS = { model: 'demo', machineId: '3', instanceId: 'i-0123456789abcdef0' };

/** Every attribute a write names: its key's and its expressions' (what IAM's dynamodb:Attributes sees). */
function attributesNamed(input: ReturnType<typeof routineInstanceWrite>): string[] {
  return [
    ...Object.keys(input.Key ?? {}),
    ...Object.values(input.ExpressionAttributeNames ?? {}),
  ].sort();
}

describe('the routine write names only what the instance-events role may name', () => {
  it.each(['pending', 'running'] as const)(
    'a %s without addresses and without read-back names exactly ROUTINE_WRITE_ATTRIBUTES and asks nothing back',
    (state) => {
      const input = routineInstanceWrite('t', { ...NEWS, state }, undefined, { readBack: false });
      expect(attributesNamed(input)).toEqual([...ROUTINE_WRITE_ATTRIBUTES].sort());
      expect(input.ReturnValues).toBeUndefined();
      expect(input.ReturnValuesOnConditionCheckFailure).toBeUndefined();
    },
  );

  it('reads a refused pending back (ALL_OLD) only when asked to: the sweep’s, never the handler’s', () => {
    const sweep = routineInstanceWrite('t', { ...NEWS, state: 'pending' });
    expect(sweep.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    const running = routineInstanceWrite('t', { ...NEWS, state: 'running' });
    expect(running.ReturnValuesOnConditionCheckFailure).toBeUndefined();
  });

  it('names the addresses only when given them (the sweep), setting one and removing the other', () => {
    const input = routineInstanceWrite(
      't',
      { ...NEWS, state: 'running' },
      { privateAddress: '10.0.0.5' },
      { now: new Date('2026-11-26T07:00:00Z') },
    );
    expect(attributesNamed(input)).toEqual(
      [...ROUTINE_WRITE_ATTRIBUTES, 'privateAddress', 'publicAddress'].sort(),
    );
    expect(input.UpdateExpression).toBe(
      'SET #instanceStatus = :state, #statusAt = :now, #updatedAt = :now, #private = :privateAddress REMOVE #public',
    );
    expect(input.ExpressionAttributeValues).toMatchObject({
      ':state': 'running',
      ':now': '2026-11-26T07:00:00.000Z',
      ':privateAddress': '10.0.0.5',
    });
  });

  it('refuses a state that is not routine news', () => {
    expect(() => routineInstanceWrite('t', { ...NEWS, state: 'stopped' })).toThrow(
      'instance state "stopped" is not routine news',
    );
  });
});

describe('the Dead machine’s write of its instance going', () => {
  it('names only attributes the instance-events role may name, asks nothing back, and applies only to a Dead machine recording the instance', () => {
    const input = deadInstanceWrite(
      't',
      { ...NEWS, state: 'terminated' },
      new Date('2026-11-26T07:00:00Z'),
    );
    const named = attributesNamed(input);
    expect(named.every((a) => (ROUTINE_WRITE_ATTRIBUTES as readonly string[]).includes(a))).toBe(
      true,
    );
    expect(named).toEqual(
      ['instanceId', 'instanceStatus', 'instanceStatusAt', 'life', 'pk', 'sk', 'updatedAt'].sort(),
    );
    expect(input.ConditionExpression).toBe('#instanceId = :instanceId AND #life = :dead');
    expect(input.ExpressionAttributeValues).toEqual({
      ':state': 'terminated',
      ':instanceId': NEWS.instanceId,
      ':dead': 'dead',
      ':now': '2026-11-26T07:00:00.000Z',
    });
    expect(input.ReturnValues).toBeUndefined();
    expect(input.ReturnValuesOnConditionCheckFailure).toBeUndefined();
  });
});
