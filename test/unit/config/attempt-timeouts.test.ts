import { DescribeAvailabilityZonesCommand } from '@aws-sdk/client-ec2';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DYNAMODB_ATTEMPT_TIMEOUT_MS, dynamoDbClient } from '../../../config/clients';
import { provisioningTuning } from '../../../config/env';
import { EC2_ATTEMPT_TIMEOUT_MS, workerEc2Client } from '../../../ec2/client';
import { classifyError } from '../../../ec2/errors';

/**
 * One attempt of a worker's EC2 or DynamoDB call whose socket goes silent (a
 * connection dropped on the way) fails as a timeout once it has been idle
 * for its attempt timeout, and the SDK tries again: a hung socket costs one
 * attempt, not the step's whole time (config/clients.ts, ec2/client.ts).
 */

const CREDENTIALS = { accessKeyId: 'a', secretAccessKey: 'b' };
const ATTEMPT_MS = 300;

/** A loopback server that holds the first `hold` requests unanswered and answers the rest with `answer`. */
async function endpoint(hold: number, answer: (res: ServerResponse) => void) {
  const arrived: number[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    arrived.push(Date.now());
    if (arrived.length <= hold) held.push(res);
    else answer(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arrived,
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

const EC2_ANSWER = (res: ServerResponse) =>
  res
    .writeHead(200, { 'content-type': 'text/xml' })
    .end(
      '<DescribeAvailabilityZonesResponse><availabilityZoneInfo><item><zoneName>us-east-1a</zoneName></item></availabilityZoneInfo></DescribeAvailabilityZonesResponse>',
    );
const DYNAMODB_ANSWER = (res: ServerResponse) =>
  res
    .writeHead(200, { 'content-type': 'application/x-amz-json-1.0' })
    .end(JSON.stringify({ Item: { pk: { S: 'x' } } }));

/** The socket timeout a client's request handler was given. */
async function socketTimeoutOf(client: { config: { requestHandler: unknown } }): Promise<unknown> {
  const handler = client.config.requestHandler as {
    configProvider: Promise<{ socketTimeout?: number }>;
  };
  return (await handler.configProvider).socketTimeout;
}

describe('an attempt whose answer never comes', () => {
  it('the bounds: EC2 90 s an attempt (above the proxy’s longest injected answer, 70 s; below a launch try’s 120 s), DynamoDB 30 s; the clients have them by default', async () => {
    expect(EC2_ATTEMPT_TIMEOUT_MS).toBe(90_000);
    expect(DYNAMODB_ATTEMPT_TIMEOUT_MS).toBe(30_000);
    const ec2 = workerEc2Client({ region: 'us-east-1', credentials: CREDENTIALS });
    const ddb = dynamoDbClient({ region: 'us-east-1', dynamodbEndpoint: 'http://127.0.0.1:1' });
    try {
      expect(await socketTimeoutOf(ec2)).toBe(90_000);
      expect(await socketTimeoutOf(ddb)).toBe(30_000);
    } finally {
      ec2.destroy();
      ddb.destroy();
    }
  });

  it('EC2: the hung attempt times out and the next one answers', async () => {
    const server = await endpoint(1, EC2_ANSWER);
    const client = workerEc2Client(
      { region: 'us-east-1', endpoint: server.url, credentials: CREDENTIALS },
      provisioningTuning({}),
      ATTEMPT_MS,
    );
    try {
      const out = await client.send(new DescribeAvailabilityZonesCommand({}));
      expect(out.AvailabilityZones?.map((z) => z.ZoneName)).toEqual(['us-east-1a']);
      // at least the hung one and one answered (a stalled test process may time out one more)
      expect(server.arrived.length).toBeGreaterThanOrEqual(2);
      // the second attempt came after the first one's timeout
      expect(server.arrived[1]! - server.arrived[0]!).toBeGreaterThanOrEqual(ATTEMPT_MS - 50);
    } finally {
      client.destroy();
      await server.close();
    }
  });

  it('EC2: when every attempt hangs, the call ends with a TimeoutError, a transient failure', async () => {
    const server = await endpoint(Number.MAX_SAFE_INTEGER, EC2_ANSWER);
    const client = workerEc2Client(
      { region: 'us-east-1', endpoint: server.url, credentials: CREDENTIALS },
      provisioningTuning({}),
      ATTEMPT_MS,
    );
    try {
      const err = await client.send(new DescribeAvailabilityZonesCommand({})).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as Error).name).toBe('TimeoutError');
      expect((err as Error).message).toContain(`timed out after ${ATTEMPT_MS} ms of inactivity`);
      expect(classifyError(err)).toBe('transient');
      // retried by the SDK, each attempt on its own timeout
      expect(server.arrived.length).toBeGreaterThan(1);
    } finally {
      client.destroy();
      await server.close();
    }
  });

  it('DynamoDB: the hung attempt times out and the next one answers', async () => {
    const server = await endpoint(1, DYNAMODB_ANSWER);
    const client = dynamoDbClient(
      { region: 'us-east-1', dynamodbEndpoint: server.url },
      ATTEMPT_MS,
    );
    try {
      const out = await client.send(
        new GetItemCommand({ TableName: 't', Key: { pk: { S: 'x' } } }),
      );
      expect(out.Item).toEqual({ pk: { S: 'x' } });
      // at least the hung one and one answered (a stalled test process may time out one more)
      expect(server.arrived.length).toBeGreaterThanOrEqual(2);
      expect(server.arrived[1]! - server.arrived[0]!).toBeGreaterThanOrEqual(ATTEMPT_MS - 50);
    } finally {
      client.destroy();
      await server.close();
    }
  });

  it('DynamoDB: when every attempt hangs, the call ends with a TimeoutError', async () => {
    const server = await endpoint(Number.MAX_SAFE_INTEGER, DYNAMODB_ANSWER);
    const client = dynamoDbClient(
      { region: 'us-east-1', dynamodbEndpoint: server.url },
      ATTEMPT_MS,
    );
    try {
      const err = await client
        .send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'x' } } }))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect((err as Error).name).toBe('TimeoutError');
      expect(server.arrived.length).toBeGreaterThan(1);
    } finally {
      client.destroy();
      await server.close();
    }
  });
});
