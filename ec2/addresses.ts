import type { Instance } from '@aws-sdk/client-ec2';

/** A machine's recorded instance and addresses, as the sweep reads them. */
export interface AddressedMachine {
  id: string;
  instanceId?: string;
  privateAddress?: string;
  publicAddress?: string;
}

export interface AddressChange {
  machineId: string;
  instanceId: string;
  privateAddress?: string;
  publicAddress?: string;
}

/** The addresses EC2 lists for an instance (none for an empty one), as a machine records them. */
export function ec2Addresses(i: Instance): { privateAddress?: string; publicAddress?: string } {
  const privateAddress = i.PrivateIpAddress || undefined;
  const publicAddress = i.PublicIpAddress || undefined;
  return {
    ...(privateAddress ? { privateAddress } : {}),
    ...(publicAddress ? { publicAddress } : {}),
  };
}

/**
 * The machines whose instance EC2 lists with other addresses than recorded
 * (`juju status`'s Address column). Only instances the listing holds count:
 * one it does not list says nothing about addresses, and is left as it is.
 */
export function addressChanges(
  machines: readonly AddressedMachine[],
  listed: readonly Instance[],
): AddressChange[] {
  const byId = new Map(listed.flatMap((i) => (i.InstanceId ? [[i.InstanceId, i] as const] : [])));
  const changes: AddressChange[] = [];
  for (const m of machines) {
    if (!m.instanceId) continue;
    const i = byId.get(m.instanceId);
    if (!i) continue;
    const privateAddress = i.PrivateIpAddress || undefined;
    const publicAddress = i.PublicIpAddress || undefined;
    if (privateAddress === m.privateAddress && publicAddress === m.publicAddress) continue;
    changes.push({
      machineId: m.id,
      instanceId: m.instanceId,
      ...(privateAddress ? { privateAddress } : {}),
      ...(publicAddress ? { publicAddress } : {}),
    });
  }
  return changes;
}
