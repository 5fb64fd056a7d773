import { ZoneCountStore } from '../../state/zone-counts';
import { apiClient, eventually, uniqueName } from './api-client';
import { dynamoClientFor, loadTestStack } from './stack';

/**
 * Zone spread counts every machine hosting a unit of an application, however
 * the unit got there (issue 23, item 4; Juju's distribution group is the
 * machines with a unit of the application assigned). A unit placed with
 * `--to N` on a machine already running in a zone makes that zone one of
 * its application's: the application's next machine goes elsewhere.
 */
const stack = loadTestStack();
const api = apiClient(stack);
const ddb = dynamoClientFor(stack);
const counts = new ZoneCountStore(ddb, stack.tableName);
/** Two zones: a tie between them goes to us-east-1a (the name that sorts first). */
const IN_ZONES = 'zones=us-east-1a,us-east-1b';

afterAll(() => ddb.destroy());

async function running(model: string, id: string): Promise<Record<string, any>> {
  const res = await eventually(
    () => api.get(`/v1/models/${model}/machines/${encodeURIComponent(id)}`),
    (r) => r.body?.status === 'running' && typeof r.body?.zone === 'string',
    120_000,
  );
  return res.body as Record<string, any>;
}

describe('zone spread with units placed by --to', () => {
  it('counts a machine for an application once one of its units is placed there', async () => {
    const model = uniqueName('spreadto');
    expect((await api.post('/v1/models', { name: model, constraints: IN_ZONES })).status).toBe(201);
    // machine 0 (app a) runs in us-east-1a
    const a = await api.post(`/v1/models/${model}/applications`, {
      name: 'a',
      base: 'ubuntu@24.04',
    });
    expect(a.status).toBe(201);
    expect(a.body.units).toEqual([{ name: 'a/0', machine: '0' }]);
    expect((await running(model, '0')).zone).toBe('us-east-1a');

    // deploy b --to 0: machine 0 is in b's distribution group now
    const b = await api.post(`/v1/models/${model}/applications`, {
      name: 'b',
      base: 'ubuntu@24.04',
      to: ['0'],
    });
    expect(b.status).toBe(201);
    expect(b.body.units).toEqual([{ name: 'b/0', machine: '0' }]);

    // add-unit b: us-east-1a already has one of b's machines, so b/1 goes to us-east-1b
    const added = await api.post(`/v1/models/${model}/applications/b/units`, {});
    expect(added.status).toBe(201);
    expect(added.body.units).toEqual([{ name: 'b/1', machine: '1' }]);
    expect((await running(model, '1')).zone).toBe('us-east-1b');
    expect(await counts.counts(model, 'b')).toEqual({ 'us-east-1a': 1, 'us-east-1b': 1 });
    // a's spread is untouched by b's machine
    expect(await counts.counts(model, 'a')).toEqual({ 'us-east-1a': 1 });
  });

  it('counts a unit placed on a machine that has not claimed its zone yet, once it claims', async () => {
    const model = uniqueName('spreadto2');
    expect((await api.post('/v1/models', { name: model, constraints: IN_ZONES })).status).toBe(201);
    // machine 0 (no units) and, in the same breath, b's unit on it: its claim sees b either way
    expect((await api.post(`/v1/models/${model}/machines`, {})).status).toBe(201);
    const b = await api.post(`/v1/models/${model}/applications`, {
      name: 'b',
      base: 'ubuntu@24.04',
      to: ['0'],
    });
    expect(b.status).toBe(201);
    expect((await running(model, '0')).zone).toBe('us-east-1a');
    const added = await api.post(`/v1/models/${model}/applications/b/units`, {});
    expect(added.status).toBe(201);
    expect((await running(model, added.body.units[0].machine)).zone).toBe('us-east-1b');
    expect(await counts.counts(model, 'b')).toEqual({ 'us-east-1a': 1, 'us-east-1b': 1 });
    // the bare machines' group does not keep machine 0
    expect(await counts.counts(model, '')).toEqual({});
  });
});
