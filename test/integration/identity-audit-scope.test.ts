import { apiClient, eventually, uniqueName } from './api-client';
import { addUserAndLogIn } from './identity-support';
import { loadTestStack } from './stack';

const stack = loadTestStack();
const admin = apiClient(stack);

describe('a model’s audit is that model’s', () => {
  it('a new model of an old name starts with an empty audit, and a hidden 404 writes nothing into a model’s audit', async () => {
    const model = uniqueName('reused');
    // the first model of that name, with a change in its audit, then removed
    expect((await admin.post('/v1/models', { name: model })).status).toBe(201);
    expect(
      (await admin.put(`/v1/models/${model}/constraints`, { constraints: 'mem=2G' })).status,
    ).toBe(200);
    expect((await admin.delete(`/v1/models/${model}`)).status).toBe(202);
    await eventually(
      () => admin.get(`/v1/models/${model}`),
      (res) => res.status === 404,
      120_000,
      500,
    );

    const alice = await addUserAndLogIn(stack, uniqueName('alice'));
    const aliceName = (await alice.api.get('/v1/whoami')).body.user as string;
    expect((await admin.put(`/v1/access/${aliceName}`, { access: 'add-model' })).status).toBe(200);
    expect((await alice.api.post('/v1/models', { name: model })).status).toBe(201);

    // bob cannot see it: his refused writes go to the controller's audit
    const bob = await addUserAndLogIn(stack, uniqueName('bob'));
    const bobName = (await bob.api.get('/v1/whoami')).body.user as string;
    expect((await bob.api.post(`/v1/models/${model}/machines`, {})).status).toBe(404);

    const audit = await alice.api.get(`/v1/models/${model}/audit`);
    expect(audit.status).toBe(200);
    expect(
      audit.body.entries.map((e: any) => `${e.user} ${e.method} ${e.path} ${e.status}`),
    ).toEqual([`${aliceName} POST /v1/models 201`]);

    const bobs = await admin.get(`/v1/audit?user=${bobName}`);
    expect(bobs.body.entries).toHaveLength(1);
    expect(bobs.body.entries[0]).toMatchObject({
      user: bobName,
      method: 'POST',
      path: `/v1/models/${model}/machines`,
      status: 404,
    });
    expect(bobs.body.entries[0].model).toBeUndefined();
    // the old model's entries stay in the all-models audit
    const all = await admin.get(`/v1/audit?user=admin&limit=500`);
    expect(
      all.body.entries.filter((e: any) => e.model === model).map((e: any) => e.method),
    ).toEqual(['DELETE', 'PUT', 'POST']);
  }, 240_000);

  it('a tampered cursor with the right partition but another shape is a 400, never a 500', async () => {
    const model = uniqueName('cursors');
    expect((await admin.post('/v1/models', { name: model })).status).toBe(201);
    const cursor = (key: unknown) =>
      encodeURIComponent(Buffer.from(JSON.stringify(key)).toString('base64url'));
    const pk = `AUDIT#MODEL#${model}`;
    const sk = `${new Date().toISOString()}#x`;
    for (const key of [{ pk }, { pk, sk, extra: 'x' }, { pk, sk: '' }, { pk, gsi1sk: sk }]) {
      expect(await admin.get(`/v1/models/${model}/audit?cursor=${cursor(key)}`)).toEqual({
        status: 400,
        body: { error: { code: 'bad-request', message: 'invalid cursor' } },
      });
    }
    for (const key of [
      { gsi1pk: 'AUDIT', gsi1sk: sk },
      { gsi1pk: 'AUDIT', gsi1sk: sk, pk },
      { gsi1pk: 'AUDIT', gsi1sk: sk, pk, sk, more: 'x' },
    ]) {
      expect(await admin.get(`/v1/audit?cursor=${cursor(key)}`)).toEqual({
        status: 400,
        body: { error: { code: 'bad-request', message: 'invalid cursor' } },
      });
    }
    // the shape a page hands out is followed
    const whole = { gsi1pk: 'AUDIT', gsi1sk: sk, pk, sk };
    expect((await admin.get(`/v1/audit?cursor=${cursor(whole)}`)).status).toBe(200);
    expect((await admin.get(`/v1/models/${model}/audit?cursor=${cursor({ pk, sk })}`)).status).toBe(
      200,
    );
  }, 120_000);

  it('a cursor older than `since` ends the listing (200, no entries), never a 500', async () => {
    const model = uniqueName('since');
    expect((await admin.post('/v1/models', { name: model })).status).toBe(201);
    for (const constraints of ['mem=2G', 'mem=4G']) {
      expect((await admin.put(`/v1/models/${model}/constraints`, { constraints })).status).toBe(
        200,
      );
    }
    // a real cursor from a one-entry page, then `since` raised past it
    const first = await admin.get(`/v1/audit?limit=1`);
    expect(first.status).toBe(200);
    expect(typeof first.body.cursor).toBe('string');
    const modelFirst = await admin.get(`/v1/models/${model}/audit?limit=1`);
    expect(typeof modelFirst.body.cursor).toBe('string');
    const later = encodeURIComponent(new Date(Date.now() + 60_000).toISOString());
    const cursor = (c: string) => encodeURIComponent(c);
    expect(await admin.get(`/v1/audit?cursor=${cursor(first.body.cursor)}&since=${later}`)).toEqual(
      { status: 200, body: { entries: [] } },
    );
    expect(
      await admin.get(
        `/v1/models/${model}/audit?cursor=${cursor(modelFirst.body.cursor)}&since=${later}`,
      ),
    ).toEqual({ status: 200, body: { entries: [] } });
    // with `since` before the cursor, the next page is read as usual
    const earlier = encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString());
    const next = await admin.get(
      `/v1/models/${model}/audit?cursor=${cursor(modelFirst.body.cursor)}&since=${earlier}`,
    );
    expect(next.status).toBe(200);
    expect(next.body.entries.map((e: any) => `${e.method} ${e.status}`)).toEqual([
      'PUT 200',
      'POST 201',
    ]);
  }, 120_000);
});
