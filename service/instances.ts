import { describeInstances, type Ec2Client } from '../ec2/instances';
import { lambdaEc2Client } from '../ec2/lambda-client';
import type { InstanceState } from '../core/liveness';
import { instanceState } from '../core/liveness';

/**
 * EC2's state of one instance: undefined when EC2 does not list it (gone
 * long since, or launched too lately for its listing to show it: the caller
 * tells which, core/liveness.ts `observedState`); throws when EC2 cannot be
 * asked.
 */
export interface InstanceLookup {
  state(region: string, instanceId: string): Promise<InstanceState | undefined>;
}

/** EC2's code when an id asked for by `InstanceIds` is not listed. */
const NOT_FOUND = 'InvalidInstanceID.NotFound';

/**
 * How long one DescribeInstances try may take, and how many tries: the
 * lookup and the signal after it (service/workflows.ts SIGNAL_DEADLINE_MS)
 * stay well inside the API's 29 s.
 */
export const EC2_LOOKUP_TIMEOUT_MS = 4_000;
export const EC2_LOOKUP_ATTEMPTS = 2;

/** EC2 lists the instance but in no state the provisioner knows: nothing can be concluded. */
export class UnreadableInstanceStateError extends Error {
  override name = 'UnreadableInstanceStateError';
}

/** Asks EC2 for the instance by its id (`InstanceIds`); "not found" is an answer, not a failure. */
export class Ec2InstanceLookup implements InstanceLookup {
  private readonly clients = new Map<string, Ec2Client>();

  constructor(private readonly endpoint: string | undefined) {}

  private client(region: string): Ec2Client {
    let client = this.clients.get(region);
    if (!client) {
      client = lambdaEc2Client({
        region,
        endpoint: this.endpoint,
        maxAttempts: EC2_LOOKUP_ATTEMPTS,
        timeoutMs: EC2_LOOKUP_TIMEOUT_MS,
      });
      this.clients.set(region, client);
    }
    return client;
  }

  async state(region: string, instanceId: string): Promise<InstanceState | undefined> {
    try {
      const out = await describeInstances(this.client(region), { InstanceIds: [instanceId] });
      const found = (out.Reservations ?? [])
        .flatMap((r) => r.Instances ?? [])
        .find((i) => i.InstanceId === instanceId);
      if (!found) return undefined;
      const state = instanceState(found);
      // listed: it exists; a state that cannot be read is no proof it is gone (fail closed)
      if (state === undefined) {
        throw new UnreadableInstanceStateError(
          `EC2 lists instance "${instanceId}" in a state that cannot be read (${String(found.State?.Name)})`,
        );
      }
      return state;
    } catch (err) {
      if (err instanceof Error && err.name === NOT_FOUND) return undefined;
      throw err;
    }
  }
}
