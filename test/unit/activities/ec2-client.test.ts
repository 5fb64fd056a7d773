import { DescribeAvailabilityZonesCommand } from '@aws-sdk/client-ec2';
import { createServer, type Agent, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ec2MaxSockets, UNPACED_EC2_SOCKETS, workerEc2Client } from '../../../ec2/client';
import { provisioningTuning } from '../../../config/env';
import { asCaller, CALLER_HEADER } from '../../../ec2/caller';

/** The http agent a client's request handler sends with (the local stack's endpoints are http). */
async function agentOf(client: ReturnType<typeof workerEc2Client>): Promise<Agent> {
  const handler = client.config.requestHandler as unknown as {
    configProvider: Promise<{ httpAgentProvider: () => Promise<Agent> }>;
  };
  return (await handler.configProvider).httpAgentProvider();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the worker’s EC2 client: sockets for every call its buckets let go at once', () => {
  it('has 187 sockets by default: launch burst 5, terminate 100, describe 50, and 32 unpaced', async () => {
    expect(ec2MaxSockets(provisioningTuning({}))).toBe(5 + 100 + 50 + UNPACED_EC2_SOCKETS);
    const client = workerEc2Client(
      { region: 'us-east-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } },
      provisioningTuning({}),
    );
    try {
      const agent = await agentOf(client);
      expect(agent.maxSockets).toBe(187);
      expect((agent as Agent & { keepAlive?: boolean }).keepAlive).toBe(true);
    } finally {
      client.destroy();
    }
  });

  it('grows and shrinks with the buckets the environment sets', async () => {
    const tuning = provisioningTuning({
      PROVISIONER_LAUNCH_BURST: '10',
      PROVISIONER_TEARDOWN_TERMINATE_BURST: '20',
      PROVISIONER_TEARDOWN_DESCRIBE_BURST: '8',
    });
    expect(ec2MaxSockets(tuning)).toBe(10 + 20 + 8 + 32);
    const client = workerEc2Client({ region: 'us-east-1' }, tuning);
    try {
      expect((await agentOf(client)).maxSockets).toBe(70);
    } finally {
      client.destroy();
    }
  });

  it('sends that many calls at once, and no more, to a slow endpoint', async () => {
    const held: ServerResponse[] = [];
    let answering = false;
    const reply = (res: ServerResponse) =>
      res
        .writeHead(200, { 'content-type': 'text/xml' })
        .end(
          '<DescribeAvailabilityZonesResponse><availabilityZoneInfo/></DescribeAvailabilityZonesResponse>',
        );
    const server = createServer((req, res) => {
      req.resume();
      if (answering) reply(res);
      else held.push(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const tuning = provisioningTuning({
      PROVISIONER_LAUNCH_BURST: '1',
      PROVISIONER_TEARDOWN_TERMINATE_BURST: '4',
      PROVISIONER_TEARDOWN_DESCRIBE_BURST: '3',
    });
    const client = workerEc2Client(
      {
        region: 'us-east-1',
        endpoint: `http://127.0.0.1:${port}`,
        credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      },
      tuning,
    );
    try {
      const calls = Array.from({ length: 60 }, () =>
        client.send(new DescribeAvailabilityZonesCommand({})),
      );
      // every call the sockets allow arrives; then a while longer, in which no more may
      const deadline = Date.now() + 30_000;
      while (held.length < 40 && Date.now() < deadline) await sleep(50);
      await sleep(1000);
      expect(held.length).toBe(1 + 4 + 3 + UNPACED_EC2_SOCKETS);
      answering = true;
      for (const res of held.splice(0)) reply(res);
      await Promise.all(calls);
    } finally {
      client.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('the worker’s EC2 client names its caller only when told to (PROVISIONER_EC2_CALLER_HEADER)', () => {
  /**
   * Sends one call inside `asCaller(caller)` (or none), with the worker's
   * environment `env` and a configured endpoint or AWS's own, and returns the
   * caller header it carried.
   */
  async function headerSent(
    env: NodeJS.ProcessEnv,
    endpoint: boolean,
    caller?: string,
  ): Promise<string | undefined> {
    const client = workerEc2Client(
      {
        region: 'us-east-1',
        credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
        ...(endpoint ? { endpoint: 'http://127.0.0.1:1' } : {}),
      },
      provisioningTuning(env),
    );
    let seen: string | undefined;
    // the request as it would be sent, answered in process
    client.middlewareStack.add(
      () => (args) => {
        const headers = (args.request as { headers: Record<string, string> }).headers;
        seen = headers[CALLER_HEADER];
        return Promise.resolve({ output: { $metadata: {} }, response: {} });
      },
      { step: 'finalizeRequest', name: 'answeredInProcess', priority: 'low' },
    );
    try {
      const send = () => client.send(new DescribeAvailabilityZonesCommand({}));
      await (caller === undefined ? send() : asCaller(caller, send));
    } finally {
      client.destroy();
    }
    return seen;
  }

  const ON = { PROVISIONER_EC2_CALLER_HEADER: 'on' };

  it('sends the caller in x-provisioner-caller when the local stack sets PROVISIONER_EC2_CALLER_HEADER=on', async () => {
    expect(await headerSent(ON, true, 'teardown:poll')).toBe('teardown:poll');
  });

  it('sends no caller header by default, even to a configured endpoint (a VPC endpoint of EC2’s in the cloud)', async () => {
    expect(await headerSent({}, true, 'teardown:poll')).toBeUndefined();
    expect(
      await headerSent({ PROVISIONER_EC2_CALLER_HEADER: 'off' }, true, 'sweep'),
    ).toBeUndefined();
  });

  it('sends no caller header when no caller is named', async () => {
    expect(await headerSent(ON, true)).toBeUndefined();
    expect(await headerSent(ON, false)).toBeUndefined();
  });

  it('refuses a setting that is neither on nor off, naming it', () => {
    expect(() => provisioningTuning({ PROVISIONER_EC2_CALLER_HEADER: 'yes' })).toThrow(
      'environment variable PROVISIONER_EC2_CALLER_HEADER: "yes" is neither on nor off',
    );
  });
});
