/** A RunInstances double that is idempotent by ClientToken, as EC2 is. */
export interface TokenEc2 {
  /** RunInstances calls, by ClientToken. */
  calls: string[];
  /** Reservations EC2 made (one per distinct token): instance ids. */
  reservations: Map<string, string[]>;
  send: (cmd: { input: { ClientToken?: string; MaxCount?: number } }) => Promise<unknown>;
}

/**
 * EC2's RunInstances, idempotent by ClientToken: the same token answers the
 * same reservation; a new token launches `MaxCount` new instances
 * (`i-1`, `i-2`, …), `pending`, in us-east-1a, indexed by AmiLaunchIndex.
 */
export function tokenEc2(): TokenEc2 {
  let next = 0;
  const calls: string[] = [];
  const reservations = new Map<string, string[]>();
  return {
    calls,
    reservations,
    send: (cmd) => {
      const token = cmd.input.ClientToken ?? '';
      calls.push(token);
      let ids = reservations.get(token);
      if (!ids) {
        ids = Array.from({ length: cmd.input.MaxCount ?? 1 }, () => `i-${(next += 1)}`);
        reservations.set(token, ids);
      }
      return Promise.resolve({
        Instances: ids.map((InstanceId, AmiLaunchIndex) => ({
          InstanceId,
          AmiLaunchIndex,
          State: { Name: 'pending' },
          Placement: { AvailabilityZone: 'us-east-1a' },
        })),
      });
    },
  };
}
