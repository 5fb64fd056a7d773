import type { EC2Client, Instance, RunInstancesCommandInput } from '@aws-sdk/client-ec2';
import { TAG_MODEL } from '../../ec2/tags';
import {
  EC2ServiceException,
  paginateDescribeInstances,
  RunInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';

/** What an EC2 call that failed said: its code, HTTP status and message. */
export interface Ec2Failure {
  code: string;
  status: number | undefined;
  message: string;
}

/** The failure of `call`, which must fail with an EC2 error (anything else is re-thrown). */
export async function ec2Failure(call: Promise<unknown>): Promise<Ec2Failure> {
  try {
    await call;
  } catch (err) {
    if (err instanceof EC2ServiceException) {
      return { code: err.name, status: err.$metadata.httpStatusCode, message: err.message };
    }
    throw err;
  }
  throw new Error('expected the EC2 call to fail');
}

export interface AdminReply {
  status: number;
  body: unknown;
}

/** The proxy's counters, as `/_admin/stats` answers them. */
export interface ProxyStats {
  calls: Record<string, number>;
  injected: Record<string, number>;
  throttled: number;
}

export interface Ec2TestKitOptions {
  /** The proxy's URL (read when called: a test file may start its own proxy in beforeAll). */
  proxyUrl: () => string;
  /** The SDK client through the proxy. */
  ec2: () => EC2Client;
  /** The SDK client straight to moto, for what the proxy must not be asked. */
  moto: EC2Client;
  /** The tag key this file's launches carry, so its instances are found and terminated. */
  tagKey: string;
  imageId: () => string;
}

/**
 * The helpers both EC2 proxy test files need: the admin API, launches tagged
 * for the file (each remembered, so `terminateLaunched` leaves nothing
 * running), and moto's own view of them.
 */
export class Ec2TestKit {
  readonly launched = new Set<string>();

  constructor(private readonly options: Ec2TestKitOptions) {}

  /** A call to the proxy's admin API; a string body is sent as it is (to test malformed JSON). */
  admin = async (method: string, path: string, body?: unknown): Promise<AdminReply> => {
    const res = await fetch(`${this.options.proxyUrl()}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };

  stats = async (): Promise<ProxyStats> =>
    (await this.admin('GET', '/_admin/stats')).body as ProxyStats;

  launchInput = (
    tag: string,
    extra: Partial<RunInstancesCommandInput> = {},
  ): RunInstancesCommandInput => ({
    ImageId: this.options.imageId(),
    InstanceType: 't3.small',
    MinCount: 1,
    MaxCount: 1,
    TagSpecifications: [
      { ResourceType: 'instance', Tags: [{ Key: this.options.tagKey, Value: tag }] },
    ],
    ...extra,
  });

  /** One RunInstances through the proxy; the instances it answers are remembered. */
  launch = async (
    tag: string,
    extra: Partial<RunInstancesCommandInput> = {},
  ): Promise<Instance[]> => {
    const out = await this.options
      .ec2()
      .send(new RunInstancesCommand(this.launchInput(tag, extra)));
    const instances = out.Instances ?? [];
    this.remember(instances);
    return instances;
  };

  /** Instances moto holds with this tag (asked of moto directly, not through the proxy), every page. */
  motoInstances = async (tag: string): Promise<Instance[]> => {
    const found: Instance[] = [];
    const pages = paginateDescribeInstances(
      { client: this.options.moto },
      { Filters: [{ Name: `tag:${this.options.tagKey}`, Values: [tag] }] },
    );
    for await (const page of pages) {
      for (const r of page.Reservations ?? []) found.push(...(r.Instances ?? []));
    }
    this.remember(found);
    return found;
  };

  /** Terminates (in moto) every instance this file launched or found. */
  terminateLaunched = async (): Promise<void> => {
    const ids = [...this.launched];
    if (ids.length > 0) {
      await this.options.moto.send(new TerminateInstancesCommand({ InstanceIds: ids }));
    }
  };

  private remember(instances: readonly Instance[]): void {
    for (const i of instances) if (i.InstanceId) this.launched.add(i.InstanceId);
  }
}

/**
 * Every instance EC2 (moto, asked directly) holds tagged for `model`, in
 * any state unless `states` narrows them (terminated ones too by default),
 * over every page.
 */
export async function modelInstances(
  ec2: EC2Client,
  model: string,
  states?: readonly string[],
): Promise<Instance[]> {
  const found: Instance[] = [];
  const pages = paginateDescribeInstances(
    { client: ec2, pageSize: 1000 },
    {
      Filters: [
        { Name: `tag:${TAG_MODEL}`, Values: [model] },
        ...(states ? [{ Name: 'instance-state-name', Values: [...states] }] : []),
      ],
    },
  );
  for await (const page of pages) {
    for (const r of page.Reservations ?? []) found.push(...(r.Instances ?? []));
  }
  return found;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A call to the admin API of the EC2 proxy at `url` that must answer 200 (a
 * test's set-up or read-out step); its JSON answer.
 */
export async function proxyAdmin(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(res.status).toBe(200);
  return res.json();
}

/** How many calls of `action` the EC2 proxy at `url` has served since its stats were reset. */
export async function proxyCalls(url: string, action: string): Promise<number> {
  const stats = (await proxyAdmin(url, 'GET', '/_admin/stats')) as ProxyStats;
  return stats.calls[action] ?? 0;
}
