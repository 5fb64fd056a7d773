import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  EC2_LOOKUP_ATTEMPTS,
  EC2_LOOKUP_TIMEOUT_MS,
  Ec2InstanceLookup,
  UnreadableInstanceStateError,
} from '../../../service/instances';

/** A local EC2 endpoint (127.0.0.1, a free port) answering every call with `answer`, or never. */
async function fakeEc2(answer: string | undefined): Promise<{ endpoint: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    if (answer === undefined) return; // never answers
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { endpoint: `http://127.0.0.1:${port}`, server };
}

function describeAnswer(state: string): string {
  return (
    '<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">' +
    '<requestId>r</requestId><reservationSet><item><reservationId>r-1</reservationId>' +
    '<instancesSet><item><instanceId>i-1</instanceId>' +
    `<instanceState><code>99</code><name>${state}</name></instanceState>` +
    '</item></instancesSet></item></reservationSet></DescribeInstancesResponse>'
  );
}

describe('Ec2InstanceLookup', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  });

  it('answers the state EC2 lists the instance in', async () => {
    const fake = await fakeEc2(describeAnswer('terminated'));
    server = fake.server;
    await expect(new Ec2InstanceLookup(fake.endpoint).state('us-east-1', 'i-1')).resolves.toBe(
      'terminated',
    );
  });

  it('fails closed when EC2 lists the instance in a state it cannot read (it is not "gone")', async () => {
    const fake = await fakeEc2(describeAnswer('hibernating'));
    server = fake.server;
    const err = await new Ec2InstanceLookup(fake.endpoint)
      .state('us-east-1', 'i-1')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnreadableInstanceStateError);
    expect((err as Error).message).toBe(
      'EC2 lists instance "i-1" in a state that cannot be read (hibernating)',
    );
  });

  it('gives up on an EC2 that never answers within its bounded tries', async () => {
    const fake = await fakeEc2(undefined);
    server = fake.server;
    const started = Date.now();
    await expect(new Ec2InstanceLookup(fake.endpoint).state('us-east-1', 'i-1')).rejects.toThrow();
    const took = Date.now() - started;
    // each try is cut at EC2_LOOKUP_TIMEOUT_MS; room for the SDK's backoff and a busy machine
    expect(took).toBeLessThan(EC2_LOOKUP_ATTEMPTS * EC2_LOOKUP_TIMEOUT_MS + 8_000);
  }, 60_000);
});
