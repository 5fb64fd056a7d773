import {
  DescribeAvailabilityZonesCommand,
  DescribeInstanceTypeOfferingsCommand,
} from '@aws-sdk/client-ec2';
import { ConstraintsError, PlacementError } from '../../../core';
import {
  checkOffered,
  Ec2Offerings,
  OFFERINGS_FAILURE_TTL_MS,
  OFFERINGS_TTL_MS,
  type OfferingsSend,
} from '../../../service/offerings';

const REGION = 'us-east-1';

/** A stubbed EC2: answers from `answer`, counting calls per command. */
function stubEc2(answer: (command: unknown, signal?: AbortSignal) => unknown) {
  const calls: Array<{ name: string; input: unknown }> = [];
  const send: OfferingsSend = async (command, options) => {
    calls.push({ name: command.constructor.name, input: command.input });
    return (await answer(command, options.abortSignal)) as Awaited<ReturnType<OfferingsSend>>;
  };
  return { send, calls };
}

const zonesAnswer = {
  AvailabilityZones: [
    { ZoneName: 'us-east-1a', ZoneType: 'availability-zone' },
    { ZoneName: 'us-east-1b', ZoneType: 'availability-zone' },
    { ZoneName: 'us-east-1-bos-1a', ZoneType: 'local-zone' },
  ],
};

function healthyEc2() {
  return stubEc2((command) => {
    if (command instanceof DescribeAvailabilityZonesCommand) return zonesAnswer;
    if (command instanceof DescribeInstanceTypeOfferingsCommand) {
      // two pages: the second is asked for with the first's NextToken
      return command.input.NextToken === 'page-2'
        ? { InstanceTypeOfferings: [{ InstanceType: 'm5.large' }] }
        : { InstanceTypeOfferings: [{ InstanceType: 't3.micro' }], NextToken: 'page-2' };
    }
    throw new Error('unexpected command');
  });
}

function logSpy() {
  const warnings: Array<{ message: string; extra: unknown }> = [];
  return {
    warnings,
    log: {
      warn: (message: string, ...extra: unknown[]) => {
        warnings.push({ message, extra: extra[0] });
      },
    },
  };
}

describe('Ec2Offerings', () => {
  it('reads every page of the offered types, and only availability zones', async () => {
    const ec2 = healthyEc2();
    const offerings = new Ec2Offerings(undefined, Date.now, () => ec2.send);
    expect([...(await offerings.instanceTypes(REGION))].sort()).toEqual(['m5.large', 't3.micro']);
    expect(ec2.calls.map((c) => (c.input as { NextToken?: string }).NextToken)).toEqual([
      undefined,
      'page-2',
    ]);
    expect(ec2.calls[0]!.input).toMatchObject({
      LocationType: 'region',
      Filters: [{ Name: 'location', Values: [REGION] }],
    });
    expect([...(await offerings.zones(REGION))].sort()).toEqual(['us-east-1a', 'us-east-1b']);
  });

  it('answers from its cache for an hour, then asks again', async () => {
    let now = 1_000_000;
    const ec2 = healthyEc2();
    const offerings = new Ec2Offerings(
      undefined,
      () => now,
      () => ec2.send,
    );
    await offerings.zones(REGION);
    now += OFFERINGS_TTL_MS - 1;
    await offerings.zones(REGION);
    expect(ec2.calls).toHaveLength(1);
    now += 1;
    await offerings.zones(REGION);
    expect(ec2.calls).toHaveLength(2);
  });

  it('remembers a failed read for a minute (no call to EC2 meanwhile), then asks again', async () => {
    let now = 1_000_000;
    let down = true;
    const ec2 = stubEc2(() => {
      if (down) throw Object.assign(new Error('connect ECONNREFUSED'), { name: 'TimeoutError' });
      return zonesAnswer;
    });
    const offerings = new Ec2Offerings(
      undefined,
      () => now,
      () => ec2.send,
    );
    await expect(offerings.zones(REGION)).rejects.toThrow('ECONNREFUSED');
    now += OFFERINGS_FAILURE_TTL_MS - 1;
    await expect(offerings.zones(REGION)).rejects.toThrow('ECONNREFUSED');
    expect(ec2.calls).toHaveLength(1);
    down = false;
    now += 1;
    expect([...(await offerings.zones(REGION))].sort()).toEqual(['us-east-1a', 'us-east-1b']);
    expect(ec2.calls).toHaveLength(2);
  });
});

describe('checkOffered', () => {
  it('refuses a type the region does not offer and a zone it does not have', async () => {
    const ec2 = healthyEc2();
    const offerings = new Ec2Offerings(undefined, Date.now, () => ec2.send);
    const { log } = logSpy();
    await expect(
      checkOffered({ offerings, log }, REGION, { constraints: 'instance-type=z9.huge' }),
    ).rejects.toEqual(new ConstraintsError('invalid constraint value: instance-type=z9.huge'));
    await expect(
      checkOffered({ offerings, log }, REGION, { zones: ['us-east-1a', 'us-east-1z'] }),
    ).rejects.toEqual(new PlacementError('availability zone "us-east-1z" not valid'));
    await expect(
      checkOffered({ offerings, log }, REGION, {
        constraints: 'instance-type=m5.large',
        zones: ['us-east-1b'],
      }),
    ).resolves.toBeUndefined();
  });

  it('refuses a zone of the `zones` constraint the region does not have, as a constraint', async () => {
    const ec2 = healthyEc2();
    const offerings = new Ec2Offerings(undefined, Date.now, () => ec2.send);
    const { log } = logSpy();
    const refusal = new ConstraintsError('availability zone "us-east-1z" not valid');
    await expect(
      checkOffered({ offerings, log }, REGION, { constraints: 'zones=us-east-1a,us-east-1z' }),
    ).rejects.toEqual(refusal);
    await expect(
      checkOffered({ offerings, log }, REGION, { constraints: 'zones=us-east-1z' }),
    ).rejects.toBeInstanceOf(ConstraintsError);
    // a Local Zone is not an availability zone to launch into
    await expect(
      checkOffered({ offerings, log }, REGION, { constraints: 'zones=us-east-1-bos-1a' }),
    ).rejects.toEqual(new ConstraintsError('availability zone "us-east-1-bos-1a" not valid'));
    // with a placed zone too, the constraint's is named first; the region's zones read once
    await expect(
      checkOffered({ offerings, log }, REGION, {
        constraints: 'zones=us-east-1z',
        zones: ['us-east-1y'],
      }),
    ).rejects.toEqual(refusal);
    await expect(
      checkOffered({ offerings, log }, REGION, {
        constraints: 'zones=us-east-1a,us-east-1b instance-type=t3.micro',
        zones: ['us-east-1a'],
      }),
    ).resolves.toBeUndefined();
    // an empty list sets the key and names no zone: nothing to ask EC2
    const before = ec2.calls.length;
    await expect(
      checkOffered({ offerings, log }, REGION, { constraints: 'zones= mem=2G' }),
    ).resolves.toBeUndefined();
    expect(ec2.calls.length).toBe(before);
    expect(ec2.calls.filter((c) => c.name === 'DescribeAvailabilityZonesCommand')).toHaveLength(1);
  });

  it('reads zones and types in parallel', async () => {
    const started: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ec2 = stubEc2(async (command) => {
      started.push(command!.constructor.name);
      await gate;
      return command instanceof DescribeAvailabilityZonesCommand
        ? zonesAnswer
        : { InstanceTypeOfferings: [{ InstanceType: 'm5.large' }] };
    });
    const offerings = new Ec2Offerings(undefined, Date.now, () => ec2.send);
    const { log } = logSpy();
    const check = checkOffered({ offerings, log }, REGION, {
      constraints: 'instance-type=m5.large',
      zones: ['us-east-1a'],
    });
    await new Promise((r) => setImmediate(r));
    // both asked before either answered
    expect(started.sort()).toEqual([
      'DescribeAvailabilityZonesCommand',
      'DescribeInstanceTypeOfferingsCommand',
    ]);
    release();
    await expect(check).resolves.toBeUndefined();
  });

  it('lets the request go on, with a warning, when EC2 cannot be reached', async () => {
    const ec2 = stubEc2(() => {
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { name: 'Error' });
    });
    const offerings = new Ec2Offerings(undefined, Date.now, () => ec2.send);
    const { log, warnings } = logSpy();
    await expect(
      checkOffered({ offerings, log }, REGION, {
        constraints: 'instance-type=z9.huge',
        zones: ['us-east-1z'],
      }),
    ).resolves.toBeUndefined();
    expect(warnings).toEqual([
      {
        message: 'could not check the region’s zones and instance types; not checked',
        extra: { region: REGION, error: 'Error' },
      },
    ]);
  });

  it('gives up at its deadline when EC2 does not answer, aborts the reads, and remembers the failure', async () => {
    let now = 1_000_000;
    const signals: AbortSignal[] = [];
    const ec2 = stubEc2(
      (_command, signal) =>
        new Promise((_, reject) => {
          signals.push(signal!);
          signal!.addEventListener('abort', () =>
            reject(Object.assign(new Error('aborted'), { name: 'AbortError' })),
          );
        }),
    );
    const offerings = new Ec2Offerings(
      undefined,
      () => now,
      () => ec2.send,
    );
    const { log, warnings } = logSpy();
    const started = Date.now();
    await expect(
      checkOffered({ offerings, log }, REGION, { constraints: 'instance-type=z9.huge' }, 50),
    ).resolves.toBeUndefined();
    // the deadline, not an SDK retry or timeout, ended it (generous bound for a busy machine)
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.extra).toEqual({ region: REGION, error: 'OfferingsTimeout' });
    // the next request within the minute does not wait on EC2 again
    now += 1_000;
    await expect(
      checkOffered({ offerings, log }, REGION, { constraints: 'instance-type=z9.huge' }, 60_000),
    ).resolves.toBeUndefined();
    expect(ec2.calls).toHaveLength(1);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]!.extra).toEqual({ region: REGION, error: 'AbortError' });
  });
});
