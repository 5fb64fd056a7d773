/**
 * A new machine as its creating request wrote it (workflows/definitions.ts
 * MachineWorkflowInput.created): the API hands it to the machine's workflow,
 * whose first step plans and claims from it without reading.
 */
export interface CreatedMachine {
  /** The model's uid, region and availability-set mode: fixed for the model's life. */
  modelUid: string;
  region: string;
  availabilitySets: boolean;
  base: string;
  constraints: string;
  placement?: string;
  applications: string[];
  /**
   * The machine's principal units (`db/0`), for what its workflow shows (the
   * claim does not depend on them). Absent: none, or a start before they were handed.
   */
  principals?: string[];
  /**
   * A request's units by machine id: the request hands one CreatedMachine for
   * all its machines, and each machine's start takes its own entry as
   * `principals` (temporal/search-attributes.ts machineStartOptions); never
   * in a machine workflow's input.
   */
  principalsOf?: Record<string, string[]>;
}

/** The creation one machine's workflow is handed: its own principals, not the request's map. */
export function createdFor(created: CreatedMachine, machineId: string): CreatedMachine {
  const { principalsOf, ...rest } = created;
  if (principalsOf === undefined) return created;
  const own = principalsOf[machineId];
  return own !== undefined && own.length > 0 ? { ...rest, principals: [...own] } : rest;
}

/** A request's creation with only these machines' units: what one of the bulk starter's chunks needs. */
export function createdForChunk(
  created: CreatedMachine,
  machineIds: readonly string[],
): CreatedMachine {
  const all = created.principalsOf;
  if (all === undefined) return created;
  const principalsOf: Record<string, string[]> = {};
  for (const id of machineIds) {
    const units = all[id];
    if (units !== undefined) principalsOf[id] = units;
  }
  return { ...created, principalsOf };
}

/**
 * What a request writes of new machines, to hand their workflows
 * (MachineWorkflowInput.created), when the model has a uid: the machines
 * then name it (`modelUid`) and are written only while the model has it
 * (state/writes.ts requireModelAlive). Undefined for a model without one.
 */
export function creationHint(
  model: { uid?: string; region: string; availabilitySets: boolean },
  machines: { base: string; constraints: string; placement?: string; applications: string[] },
): CreatedMachine | undefined {
  if (!model.uid) return undefined;
  return {
    modelUid: model.uid,
    region: model.region,
    availabilitySets: model.availabilitySets,
    base: machines.base,
    constraints: machines.constraints,
    ...(machines.placement ? { placement: machines.placement } : {}),
    applications: [...machines.applications],
  };
}
