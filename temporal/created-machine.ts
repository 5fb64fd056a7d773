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
}
