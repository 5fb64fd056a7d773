import {
  DescribeAvailabilityZonesCommand,
  DescribeInstanceTypeOfferingsCommand,
} from '@aws-sdk/client-ec2';
import { ConstraintsError, PlacementError } from '../../../core';
import { collapseConstraints } from '../../../service/constraints';
import {
  checkOffered,
  checkRetryConstraints,
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

describe('checkRetryConstraints', () => {
  const check = (own: string, model: string) => {
    const ec2 = healthyEc2();
    const offerings = new Ec2Offerings(undefined, Date.now, () => ec2.send);
    // the merge retryMachine makes: what the machine launches with
    const merged = collapseConstraints(model, own);
    return checkRetryConstraints({ offerings, log: logSpy().log }, REGION, own, model, merged);
  };
  const fromModel = (why: string, model: string) =>
    new ConstraintsError(
      `${why}: from the model's constraints "${model}", which this retry does not replace ` +
        '(change them with set-model-constraints, or give the retry its own)',
    );

  it("refuses the retry's own values in Juju's words, whatever the model's", async () => {
    await expect(check('cores=2 zones=us-east-1a,us-east-1z', 'zones=us-east-1a')).rejects.toEqual(
      new ConstraintsError('availability zone "us-east-1z" not valid'),
    );
    await expect(check('instance-type=z9.huge', 'zones=us-east-1z')).rejects.toEqual(
      new ConstraintsError('invalid constraint value: instance-type=z9.huge'),
    );
  });

  it('a zone stored on the model does not refuse a retry that can still launch', async () => {
    // one stored zone is gone, the other is there: the machine can launch there
    await expect(check('cores=2', 'zones=us-east-1a,us-east-1z')).resolves.toBeUndefined();
    // the retry's own zones replace the model's, bad as they are
    await expect(check('cores=2 zones=us-east-1b', 'zones=us-east-1z')).resolves.toBeUndefined();
    await expect(
      check('instance-type=t3.micro', 'instance-type=z9.huge zones=us-east-1a'),
    ).resolves.toBeUndefined();
  });

  it("refuses a stored combination that cannot launch, saying it is the model's constraint", async () => {
    await expect(check('cores=2', 'zones=us-east-1z')).rejects.toEqual(
      fromModel('availability zone "us-east-1z" not valid', 'zones=us-east-1z'),
    );
    await expect(check('cores=2', 'zones=us-east-1y,us-east-1z')).rejects.toEqual(
      fromModel(
        'no availability zone of "us-east-1y", "us-east-1z" is valid',
        'zones=us-east-1y,us-east-1z',
      ),
    );
    // the merge keeps the stored type (zones do not conflict with it): the machine would launch with it
    await expect(check('zones=us-east-1a', 'instance-type=z9.huge')).rejects.toEqual(
      fromModel('invalid constraint value: instance-type=z9.huge', 'instance-type=z9.huge'),
    );
  });

  it.each(['mem=4G', 'cores=2', 'cpu-power=100', 'arch=arm64'])(
    "a stored instance type the retry's %s masks in the merge refuses nothing (it is not launched with)",
    async (own) => {
      expect(collapseConstraints('instance-type=z9.huge', own)).not.toContain('instance-type');
      await expect(check(own, 'instance-type=z9.huge')).resolves.toBeUndefined();
    },
  );

  it('reads the types and zones once, in parallel, under one deadline', async () => {
    const started: string[] = [];
    // EC2 never answers; a read ends only when the deadline aborts it
    const ec2 = stubEc2(
      (command, signal) =>
        new Promise((_resolve, reject) => {
          started.push(command!.constructor.name);
          signal?.addEventListener('abort', () =>
            reject(Object.assign(new Error('aborted'), { name: 'AbortError' })),
          );
        }),
    );
    const offerings = new Ec2Offerings(undefined, Date.now, () => ec2.send);
    const { log, warnings } = logSpy();
    const model = 'instance-type=m5.large zones=us-east-1a,us-east-1b';
    // root-disk does not mask the stored type: both the type and the zones come from the model
    const own = 'root-disk=16G';
    const check = checkRetryConstraints(
      { offerings, log },
      REGION,
      own,
      model,
      collapseConstraints(model, own),
      500,
    );
    await new Promise((r) => setImmediate(r));
    // both asked before either answered (one deadline, not one per read or per zone)
    expect(started.sort()).toEqual([
      'DescribeAvailabilityZonesCommand',
      'DescribeInstanceTypeOfferingsCommand',
    ]);
    await expect(check).resolves.toBeUndefined();
    // one deadline passed: one warning, each read asked once
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.extra).toEqual({ region: REGION, error: 'OfferingsTimeout' });
    expect(ec2.calls.map((c) => c.name).sort()).toEqual([
      'DescribeAvailabilityZonesCommand',
      'DescribeInstanceTypeOfferingsCommand',
    ]);
  });
});
