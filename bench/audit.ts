/**
 * What the instances say about the machines once a run ends: duplicates
 * (a machine with more than one live instance tagged for it) and strays
 * (a live instance tagged for the model that no machine records).
 */
export interface MachineView {
  id: string;
  status: string;
  instanceId?: string;
}

export interface InstanceView {
  instanceId: string;
  /** The machine it was launched for (its launch batch's record, or a legacy `provisioner:machine` tag). */
  machine?: string;
  state: string;
}

export interface Audit {
  launched: number;
  inError: number;
  /** Machines with two or more live instances tagged for them. */
  duplicates: number;
  /** Live instances of the model recorded by no machine (a duplicate's extra instances included). */
  strays: number;
}

const GONE = new Set(['shutting-down', 'terminated']);

export function auditInstances(
  machines: readonly MachineView[],
  instances: readonly InstanceView[],
): Audit {
  const live = instances.filter((i) => !GONE.has(i.state));
  const recorded = new Set(machines.flatMap((m) => (m.instanceId ? [m.instanceId] : [])));
  const perMachine = new Map<string, number>();
  for (const i of live) {
    if (i.machine !== undefined) perMachine.set(i.machine, (perMachine.get(i.machine) ?? 0) + 1);
  }
  return {
    launched: machines.filter((m) => m.instanceId).length,
    inError: machines.filter((m) => m.status === 'error').length,
    duplicates: [...perMachine.values()].filter((count) => count > 1).length,
    strays: live.filter((i) => !recorded.has(i.instanceId)).length,
  };
}
