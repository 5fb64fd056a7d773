import { EC2Client } from '@aws-sdk/client-ec2';
import type { InstanceState } from '../core/liveness';
import { instanceStates } from '../activities/tags';
import { localCredentialsFor } from '../config/clients';

/** EC2's state of one instance: `unknown` when EC2 no longer lists it; throws when EC2 cannot be asked. */
export interface InstanceLookup {
  state(region: string, instanceId: string): Promise<InstanceState>;
}

/** Asks EC2 (by an `instance-id` filter, so an unknown id is an empty answer, not an error). */
export class Ec2InstanceLookup implements InstanceLookup {
  private readonly clients = new Map<string, EC2Client>();

  constructor(private readonly endpoint: string | undefined) {}

  private client(region: string): EC2Client {
    let client = this.clients.get(region);
    if (!client) {
      client = new EC2Client({
        region,
        endpoint: this.endpoint,
        credentials: localCredentialsFor(this.endpoint),
      });
      this.clients.set(region, client);
    }
    return client;
  }

  async state(region: string, instanceId: string): Promise<InstanceState> {
    const states = await instanceStates(this.client(region), [instanceId]);
    return states.get(instanceId) ?? 'unknown';
  }
}
