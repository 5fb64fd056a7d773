import { createdFromRecord, type ReconciledModel } from '../../../activities/sweep-reconcile';
import type { MachineRecord } from '../../../state/types';

const MODEL: ReconciledModel = { uid: 'uid-1', region: 'us-east-1', availabilitySets: true };

function machine(fields: Partial<MachineRecord> = {}): MachineRecord {
  return {
    model: 'm',
    id: '4',
    base: 'ubuntu@22.04',
    constraints: 'mem=2048M',
    applications: ['db'],
    principals: ['db/0'],
    containers: [],
    life: 'alive',
    status: 'pending',
    message: '',
    modelUid: 'uid-1',
    createdAt: '2026-11-26T00:00:00.000Z',
    updatedAt: '2026-11-26T00:00:00.000Z',
    ...fields,
  };
}

describe('createdFromRecord (a sweep-started workflow handed its creation)', () => {
  it('hands a machine still as created what its first step plans from', () => {
    expect(createdFromRecord(machine({ placement: 'zone=us-east-1b' }), MODEL)).toEqual({
      modelUid: 'uid-1',
      region: 'us-east-1',
      availabilitySets: true,
      base: 'ubuntu@22.04',
      constraints: 'mem=2048M',
      placement: 'zone=us-east-1b',
      applications: ['db'],
      principals: ['db/0'],
    });
    // no placement: none in the hint (the claim's condition then requires none)
    expect(createdFromRecord(machine(), MODEL)).not.toHaveProperty('placement');
  });

  it('hands nothing when the machine does not name the model uid the sweep read', () => {
    expect(createdFromRecord(machine({ modelUid: undefined }), MODEL)).toBeUndefined();
    expect(createdFromRecord(machine({ modelUid: 'uid-0' }), MODEL)).toBeUndefined();
    expect(createdFromRecord(machine(), { ...MODEL, uid: undefined })).toBeUndefined();
    expect(createdFromRecord(machine(), undefined)).toBeUndefined();
  });

  it('hands nothing for a machine past its creation or not launched by its workflow', () => {
    const cases: Array<[string, Partial<MachineRecord>]> = [
      ['dying', { life: 'dying' }],
      ['dead', { life: 'dead' }],
      ['allocating (claimed)', { status: 'allocating', zone: 'us-east-1a' }],
      ['in error', { status: 'error', message: 'no capacity' }],
      ['with an instance', { status: 'running', instanceId: 'i-1', zone: 'us-east-1a' }],
      ['a zone recorded', { zone: 'us-east-1a' }],
      ['a container', { id: '4/lxd/0' }],
      ['manual', { manual: true, placement: 'ssh:ubuntu@10.0.0.1' }],
    ];
    for (const [name, fields] of cases) {
      expect([name, createdFromRecord(machine(fields), MODEL)]).toEqual([name, undefined]);
    }
  });

  it('copies the applications (the hint is not the record)', () => {
    const m = machine();
    const hint = createdFromRecord(m, MODEL)!;
    hint.applications.push('other');
    expect(m.applications).toEqual(['db']);
  });
});
