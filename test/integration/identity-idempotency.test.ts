import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createHash, randomUUID } from 'node:crypto';
import { apiClient, uniqueName } from './api-client';
import { addUserAndLogIn, PASSWORD } from './identity-support';
import { documentClient } from '../../state/table';
import { dynamoClientFor, loadTestStack } from './stack';

const stack = loadTestStack();
const admin = apiClient(stack);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('Idempotency-Key and identity', () => {
  it('a key is its caller’s own: another user presenting it runs their own request', async () => {
    const alice = await addUserAndLogIn(stack, uniqueName('alice'));
    const bob = await addUserAndLogIn(stack, uniqueName('bob'));
    for (const user of [alice, bob]) {
      const whoami = (await user.api.get('/v1/whoami')).body.user;
      expect((await admin.put(`/v1/access/${whoami}`, { access: 'add-model' })).status).toBe(200);
    }
    const model = uniqueName('keyed');
    const key = { 'idempotency-key': randomUUID() };
    const first = await alice.api.call('POST', '/v1/models', { name: model }, undefined, key);
    expect(first.status).toBe(201);
    // alice's retry replays her answer
    expect(await alice.api.call('POST', '/v1/models', { name: model }, undefined, key)).toEqual(
      first,
    );
    // bob's request with her key is his own: the name is taken, he is not its creator
    expect(await bob.api.call('POST', '/v1/models', { name: model }, undefined, key)).toMatchObject(
      { status: 409, body: { error: { code: 'conflict' } } },
    );
    expect((await bob.api.get(`/v1/models/${model}`)).status).toBe(404);
  }, 120_000);

  it('the key’s record holds no hash of the new user’s password', async () => {
    const name = uniqueName('dave');
    const idempotencyKey = randomUUID();
    const body = JSON.stringify({ name, password: PASSWORD });
    const created = await admin.call('POST', '/v1/users', undefined, body, {
      'idempotency-key': idempotencyKey,
    });
    expect(created).toEqual({ status: 201, body: { name, access: 'login' } });
    const doc = documentClient(dynamoClientFor(stack));
    const record = (
      await doc.send(
        new GetCommand({
          TableName: stack.tableName,
          Key: { pk: `IDEMPOTENCY#${sha256(idempotencyKey)}`, sk: '#REQUEST' },
          ConsistentRead: true,
        }),
      )
    ).Item;
    expect(record?.fingerprint).toBe(sha256(`POST /v1/users\n${JSON.stringify({ name })}`));
    expect(JSON.stringify(record)).not.toContain(sha256(`POST /v1/users\n${body}`));
    expect(JSON.stringify(record)).not.toContain(PASSWORD);
    // the retry answers the first answer
    expect(
      await admin.call('POST', '/v1/users', undefined, body, { 'idempotency-key': idempotencyKey }),
    ).toEqual(created);
  }, 120_000);
});
