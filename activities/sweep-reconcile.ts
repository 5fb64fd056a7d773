import { WorkflowIdConflictPolicy, WorkflowNotFoundError } from '@temporalio/client';
import { EntityNotFoundError } from '../state/errors';
import {
  MACHINE_WORKFLOW_TYPE,
  MACHINE_WORKFLOW_TYPES_QUERY,
  SEARCH_ATTRIBUTES,
  machineStartOptions,
  machineWorkflowId,
} from '../temporal/search-attributes';
import { creationHint, type CreatedMachine } from '../temporal/created-machine';
import type { MachineRecord } from '../state/types';
import { isProvisioned } from '../service/records';
import type { ActivityDeps } from './deps';
import { SWEEP_MACHINE_LANES, inLanes } from './lanes';
import type { SweptMachine } from './sweep-predicates';

/**
 * Reconciliation policy: every machine that should have a workflow has one
 * running (started again when it has none), and a Dead machine's idle
 * workflow is told `destroy` again.
 */

async function runningMachineWorkflows(deps: ActivityDeps, model: string): Promise<Set<string>> {
  const ids = new Set<string>();
  if (!deps.temporal) return ids;
  const query =
    `${MACHINE_WORKFLOW_TYPES_QUERY} AND ` +
    `${SEARCH_ATTRIBUTES.model.name} = "${model}" AND ExecutionStatus = "Running"`;
  for await (const wf of deps.temporal.workflow.list({ query })) ids.add(wf.workflowId);
  return ids;
}

/** What the sweep knows of the model, fixed for its life: enough to hand a new machine's workflow its creation. */
export interface ReconciledModel {
  uid?: string;
  region: string;
  availabilitySets: boolean;
}

/**
 * A machine as its creation left it (never claimed, launched or changed since),
 * handed to the workflow the sweep starts for it, so that its first step plans
 * and claims without reading it or the model, as the creating request's start
 * does (MachineWorkflowInput.created). Only a hint: the claim made from it is
 * conditional on every field (state/zone-count-items.ts machineClaimItem), and
 * falls back to reading the machine when the machine differs.
 */
export function createdFromRecord(
  machine: MachineRecord,
  model: ReconciledModel | undefined,
): CreatedMachine | undefined {
  if (model?.uid === undefined || machine.modelUid !== model.uid) return undefined;
  if (!isProvisioned(machine) || machine.life !== 'alive' || machine.status !== 'pending') {
    return undefined;
  }
  if (machine.instanceId !== undefined || machine.zone !== undefined) return undefined;
  const hint = creationHint(model, {
    base: machine.base,
    constraints: machine.constraints,
    ...(machine.placement ? { placement: machine.placement } : {}),
    applications: machine.applications,
  });
  return hint && machine.principals.length > 0
    ? { ...hint, principals: [...machine.principals] }
    : hint;
}

/**
 * Starts the workflow of every machine that should have one and has none; answers their ids.
 * `record`: the model as the sweep read it; a machine still as its creation wrote it is
 * started with that creation (createdFromRecord).
 */
export async function reconcileWorkflows(
  deps: ActivityDeps,
  model: string,
  machines: ReadonlyArray<SweptMachine & { manual?: boolean }>,
  record?: ReconciledModel,
): Promise<string[]> {
  const client = deps.temporal;
  if (!client) return [];
  const needing = machines.filter(
    // Manual machines have nothing to launch; once Dead they need their workflow to be removed.
    // Containers have a workflow of their own (created on their host, issue 15).
    (m) => !(m.manual && m.life !== 'dead'),
  );
  if (needing.length === 0) return [];
  // Visibility lags a little: a workflow missing from it is described before it is started again.
  const running = await runningMachineWorkflows(deps, model);
  const restarted: string[] = [];
  // A few at a time: a cut-off bulk request may leave a thousand machines without a
  // workflow, and one at a time that outlasts the model's sweep budget.
  await inLanes(needing, SWEEP_MACHINE_LANES, async (m) => {
    const workflowId = machineWorkflowId(model, m.id);
    if (m.life === 'dead' && running.has(workflowId)) {
      // A Dead machine's destroy signal is sent best effort by the API; an idle
      // workflow that missed it would wait forever, so the sweep sends it again
      // (harmless: the workflow re-reads the machine). A workflow that has
      // finished meanwhile needs nothing more. One that wrote `stopping` took it
      // and is tearing down: a signal would only cost it a workflow task (issue 30:
      // a 5 s sweep gave each of 300 dying machines one every sweep).
      if (m.status === 'stopping') return;
      try {
        await client.workflow.getHandle(workflowId).signal('destroy');
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
      return;
    }
    if (running.has(workflowId)) return;
    try {
      const d = await client.workflow.getHandle(workflowId).describe();
      if (d.status.name === 'RUNNING') return;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    // The machine list was read before; its workflow may have removed it
    // since and finished. Read it again so a removed machine gets no new run.
    const still = await deps.repo.getMachine(model, m.id).catch((err: unknown) => {
      if (err instanceof EntityNotFoundError) return undefined;
      throw err;
    });
    if (still === undefined) return;
    const created = createdFromRecord(still, record);
    // who asked, as the request's own start names them (API.md, "Audit")
    const options = machineStartOptions(model, m.id, deps.taskQueue, still.requestedBy, created);
    await client.workflow.start(MACHINE_WORKFLOW_TYPE, {
      ...options,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      // as a new machine's, but with the status the machine has now
      typedSearchAttributes: [
        { key: SEARCH_ATTRIBUTES.model, value: model },
        { key: SEARCH_ATTRIBUTES.machine, value: m.id },
        { key: SEARCH_ATTRIBUTES.status, value: m.status },
      ],
    });
    restarted.push(m.id);
  });
  // in the machines' order, whichever lane finished first
  return needing.map((m) => m.id).filter((id) => restarted.includes(id));
}
