import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { machineKey } from '../../state/items';
import { apiClient, eventually, uniqueName } from './api-client';
import { dynamoClientFor, ec2ClientFor, loadTestStack } from './stack';

const stack = loadTestStack();
const api = apiClient(stack);
const ddb = dynamoClientFor(stack);
const doc = DynamoDBDocumentClient.from(ddb);
const ec2 = ec2ClientFor(stack);

afterAll(() => {
  ddb.destroy();
  ec2.destroy();
});

describe('the sweep and a lost destroy signal', () => {
  it('tears down a Dead machine whose workflow never heard of it', async () => {
    const model = uniqueName('lostsig');
    await api.post('/v1/models', { name: model });
    await api.post(`/v1/models/${model}/machines`, {});
    const running = await eventually(
      () => api.get(`/v1/models/${model}/machines/0`),
      (res) => res.body?.status === 'running',
    );
    const instanceId = running.body.instanceId as string;
    // What the API records when it destroys the machine, without the signal (as if Temporal had been unreachable).
    await doc.send(
      new UpdateCommand({
        TableName: stack.tableName,
        Key: machineKey(model, '0'),
        UpdateExpression: 'SET life = :dead, version = version + :one',
        ExpressionAttributeValues: { ':dead': 'dead', ':one': 1 },
      }),
    );
    // the sweep (every 5 s in tests) wakes the workflow, which tears the machine down
    await eventually(
      () => api.get(`/v1/models/${model}/machines/0`),
      (res) => res.status === 404,
      60_000,
    );
    const described = await ec2.send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
    expect(described.Reservations?.[0]?.Instances?.[0]?.State?.Name).toBe('terminated');
  });
});
