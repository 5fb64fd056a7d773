import {
  describeInstances,
  runInstances,
  type Ec2Client as EC2Client,
  type Ec2Instance as Instance,
} from '../ec2/instances';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../local/stack';
import type { FloorResult } from './figures';

/**
 * The floor: N instances launched the way a script that knows EC2's limits
 * would, straight with the SDK on the same stack. One RunInstances per zone
 * over three zones, `MinCount: 1, MaxCount: k`, all at once (within the
 * RunInstances burst of 5); a short answer (the launched-instances bucket)
 * asks again for the rest; RequestLimitExceeded waits with jittered
 * exponential backoff. Then DescribeInstances once a second until every
 * instance is `running`.
 */
export const FLOOR_ZONES = ['a', 'b', 'c'] as const;
export const FLOOR_INSTANCE_TYPE = 't3.small';

export function splitOverZones(n: number, zones: number): number[] {
  return Array.from({ length: zones }, (_, i) => Math.floor(n / zones) + (i < n % zones ? 1 : 0));
}

/** Backoff before retry `attempt` (1-based): 250 ms doubling, capped at 4 s, full jitter. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  return Math.round(random() * Math.min(4000, 250 * 2 ** (attempt - 1)));
}

function ubuntuImage(): string {
  const images = JSON.parse(
    readFileSync(join(PROJECT_ROOT, 'local', 'ubuntu-amis.json'), 'utf8'),
  ) as Array<{ ami_id: string; architecture: string }>;
  const image = images.find((i) => i.architecture === 'x86_64');
  if (!image) throw new Error('local/ubuntu-amis.json has no x86_64 image');
  return image.ami_id;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function isThrottle(err: unknown): boolean {
  return (err as { name?: string }).name === 'RequestLimitExceeded';
}

export async function runFloor(
  ec2: EC2Client,
  opts: { n: number; region: string; runTag: string; deadline: number },
  notes: string[] = [],
): Promise<FloorResult> {
  const imageId = ubuntuImage();
  const result: FloorResult = {
    launchedMs: 0,
    runInstancesCalls: 0,
    throttled: 0,
    describeCalls: 0,
  };
  const ids: string[] = [];
  const start = performance.now();
  // moto launches MinCount instances and ignores MaxCount; an EC2 proxy without
  // MaxCount launches passes that on. Seen once, the floor asks for exact counts.
  let exactCounts = false;
  const launchZone = async (zone: string, count: number) => {
    let left = count;
    let attempt = 0;
    let firstAnswer = true;
    while (left > 0) {
      if (Date.now() > opts.deadline) throw new Error('floor: deadline passed while launching');
      result.runInstancesCalls += 1;
      try {
        const out = await runInstances(ec2, {
          ImageId: imageId,
          InstanceType: FLOOR_INSTANCE_TYPE,
          MinCount: exactCounts ? left : 1,
          MaxCount: left,
          Placement: { AvailabilityZone: zone },
          TagSpecifications: [
            { ResourceType: 'instance', Tags: [{ Key: 'bench:floor', Value: opts.runTag }] },
          ],
        });
        const got = (out.Instances ?? []).flatMap((i) => (i.InstanceId ? [i.InstanceId] : []));
        ids.push(...got);
        if (firstAnswer && !exactCounts && got.length === 1 && left > 1) {
          exactCounts = true;
          notes.push(
            `the EC2 endpoint launched 1 instance for MinCount 1, MaxCount ${left} (no MaxCount launches): the floor asked for exact counts (MinCount = MaxCount)`,
          );
        }
        left -= got.length;
        attempt = 0;
        firstAnswer = false;
        if (left > 0) await sleep(1000); // the launched-instances bucket refills 2 a second
      } catch (err) {
        if (!isThrottle(err)) throw err;
        result.throttled += 1;
        attempt += 1;
        await sleep(backoffMs(attempt));
      }
    }
  };
  const counts = splitOverZones(opts.n, FLOOR_ZONES.length);
  await Promise.all(
    FLOOR_ZONES.map((suffix, i) => launchZone(`${opts.region}${suffix}`, counts[i] ?? 0)),
  );
  result.launchedMs = performance.now() - start;

  const wanted = new Set(ids);
  while (Date.now() < opts.deadline) {
    let running = 0;
    try {
      let token: string | undefined;
      do {
        result.describeCalls += 1;
        const out = await describeInstances(ec2, {
          Filters: [{ Name: 'tag:bench:floor', Values: [opts.runTag] }],
          MaxResults: 1000,
          NextToken: token,
        });
        const instances: Instance[] = (out.Reservations ?? []).flatMap((r) => r.Instances ?? []);
        running += instances.filter(
          (i) => i.InstanceId && wanted.has(i.InstanceId) && i.State?.Name === 'running',
        ).length;
        token = out.NextToken;
      } while (token);
    } catch (err) {
      if (!isThrottle(err)) throw err;
      result.throttled += 1;
    }
    if (running >= wanted.size) {
      result.runningMs = performance.now() - start;
      break;
    }
    await sleep(1000);
  }
  return result;
}
