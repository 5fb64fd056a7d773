import type { MachineRecord, UnitRecord } from '../state/types';

/** Builders for new records, so every creation path fills every field the same way. */
export function newMachine(args: {
  model: string;
  id: string;
  base: string;
  constraints: string;
  placement?: string;
  principals?: string[];
  applications?: string[];
  containers?: string[];
  manual?: boolean;
  /** The model's uid (MachineRecord.modelUid), when the request hands its workflow what it wrote. */
  modelUid?: string;
  now: string;
}): MachineRecord {
  const container = args.id.includes('/');
  return {
    model: args.model,
    id: args.id,
    base: args.base,
    constraints: args.constraints,
    ...(args.placement ? { placement: args.placement } : {}),
    applications: args.applications ?? [],
    principals: args.principals ?? [],
    containers: args.containers ?? [],
    ...(args.manual ? { manual: true } : {}),
    life: 'alive',
    status: args.manual ? 'running' : 'pending',
    // a container's workflow creates it on its host once the host runs (workflows/container.ts)
    message: container ? `waiting for machine ${args.id.slice(0, args.id.indexOf('/'))}` : '',
    ...(args.modelUid ? { modelUid: args.modelUid } : {}),
    createdAt: args.now,
    updatedAt: args.now,
    version: 0,
  };
}

export function newUnit(args: {
  model: string;
  application: string;
  number: number;
  machine: string;
  constraints: string;
  principal?: string;
  subordinates?: string[];
  now: string;
}): UnitRecord {
  return {
    model: args.model,
    name: `${args.application}/${args.number}`,
    application: args.application,
    machine: args.machine,
    constraints: args.constraints,
    life: 'alive',
    ...(args.principal ? { principal: args.principal } : {}),
    subordinates: args.subordinates ?? [],
    createdAt: args.now,
    version: 0,
  };
}

/** True for machines the provisioner launches (not containers, not manual ones). */
export function isProvisioned(m: Pick<MachineRecord, 'id' | 'manual'>): boolean {
  return !m.manual && !m.id.includes('/');
}
