import {
  isConfirmedGone,
  liveInstanceMessage,
  observedState,
  unlistedYetMessage,
} from '../core/liveness';
import { DependencyUnavailableError, InvalidRequestError } from './errors';
import {
  ConcurrentChangeError,
  EntityConflictError,
  EntityNotFoundError,
  retryOnConcurrentChange,
} from '../state/errors';
import { machineWriteChunks } from '../state/repository';
import type { MachineRecord, ModelRecord } from '../state/types';
import { checkContainerHost, checkZoneInRegion, type Placement } from '../core';
import type { PlanView } from './views';
import { buildPlan, type PlanEntry } from './plans';
import { collapseConstraints, validateConstraints } from './constraints';
import { requestStep, type ServiceContext } from './context';
import {
  checkContainerBase,
  parseMachinePlacement,
  placementText,
  validateBase,
} from './placement';
import { checkOffered, checkRetryConstraints } from './offerings';
import { isProvisioned, newMachine } from './records';
import { isWorkflowServiceUnavailable } from './workflows';
import { createMachine, guardModelAndApp, updateMachineMembership } from '../state/writes';
import { setErrorMachineConstraints } from '../state/machine-writes';
import { startWorkflows } from './workflow-start';

export const DEFAULT_BASE = 'ubuntu@24.04';
const MAX_MACHINES = 1000;

export interface AddMachinesInput {
  count?: number;
  base?: string;
  constraints?: string;
  placement?: string;
}

/** What add-machine decided before it writes anything (the same for its plan). */
export interface AddMachinesDecision {
  count: number;
  base: string;
  placement: Placement | undefined;
  /** The model's constraints with the request's on top. */
  constraints: string;
  /** `lxd:N`: the host, alive, of a base its containers can run on. */
  host?: MachineRecord;
}

/**
 * add-machine's decision: count, constraints, placement and base checked as
 * the real request checks them before it writes, the model alive and not in
 * availability-set mode, and for `lxd:N` the host.
 */
export async function decideAddMachines(
  ctx: ServiceContext,
  model: string,
  input: AddMachinesInput,
): Promise<AddMachinesDecision & { modelRecord: ModelRecord }> {
  const count = input.count ?? 1;
  if (!Number.isInteger(count) || count < 1 || count > MAX_MACHINES) {
    throw new InvalidRequestError(
      `count must be an integer from 1 to ${MAX_MACHINES}, got ${String(input.count)}`,
    );
  }
  const own = validateConstraints(input.constraints ?? '');
  const placement = parseMachinePlacement(input.placement, count, own.value);
  const base = validateBase(input.base ?? DEFAULT_BASE);
  const modelRecord = await ctx.repo.getLiveModel(model);
  if (modelRecord.availabilitySets) {
    throw new EntityConflictError('add-machine is not supported with availability-sets-enabled');
  }
  if (placement?.kind === 'zone') checkZoneInRegion(placement.zone, modelRecord.region);
  await checkOffered(ctx, modelRecord.region, {
    constraints: own.canonical,
    zones: placement?.kind === 'zone' ? [placement.zone] : [],
  });
  const constraints = collapseConstraints(modelRecord.constraints, own.canonical);
  let host: MachineRecord | undefined;
  if (placement?.kind === 'container') {
    if (placement.machineId !== undefined) {
      checkContainerHost(placement.machineId);
      host = await ctx.repo.getMachine(model, placement.machineId);
      checkContainerBase(base, host.base);
    } else {
      checkContainerBase(base);
    }
  }
  return { count, base, placement, constraints, modelRecord, ...(host ? { host } : {}) };
}

/** add-machine with `"dryRun": true`: the same decision as a plan; nothing written. */
export async function planAddMachines(
  ctx: ServiceContext,
  model: string,
  input: AddMachinesInput,
): Promise<PlanView> {
  const { count, base, placement, constraints, modelRecord, host } = await decideAddMachines(
    ctx,
    model,
    input,
  );
  if (host !== undefined && host.life !== 'alive') {
    throw new EntityConflictError(`machine ${host.id} is being destroyed`);
  }
  const entries: PlanEntry[] = [];
  for (let i = 0; i < count; i++) {
    const units: string[] = [];
    if (placement?.kind === 'container') {
      if (host === undefined)
        entries.push({ kind: 'launch', units, base, constraints, applications: [] });
      entries.push({ kind: 'container', units, base, constraints, ...(host ? { host } : {}) });
    } else if (placement?.kind === 'ssh') {
      entries.push({ kind: 'manual', units, base, constraints });
    } else {
      entries.push({
        kind: 'launch',
        units,
        base,
        constraints,
        ...(placement !== undefined ? { placement } : {}),
        applications: [],
      });
    }
  }
  return buildPlan(ctx, modelRecord, entries);
}

/**
 * add-machine: records `count` machines (all or nothing), then starts one
 * workflow per provisioned machine. A machine added on its own takes the
 * model's constraints with its own on top. `lxd:N` adds a container to
 * machine N, `lxd` a new machine with a container; manual (`ssh:`) machines
 * are recorded running and never launched.
 */
export async function addMachines(
  ctx: ServiceContext,
  model: string,
  input: AddMachinesInput,
): Promise<{ id: string }[]> {
  const {
    count,
    base,
    placement,
    constraints,
    modelRecord,
    host: checkedHost,
  } = await decideAddMachines(ctx, model, input);
  const now = ctx.now().toISOString();

  if (placement?.kind === 'container') {
    if (placement.machineId !== undefined) {
      const hostId = placement.machineId;
      const host = checkedHost!;
      // a step: a retried request with the same Idempotency-Key records the same containers
      const ids = await requestStep(ctx, 'containerIds', async () => {
        if (host.life !== 'alive')
          throw new EntityConflictError(`machine ${hostId} is being destroyed`);
        return ctx.repo.allocateContainerIds(model, hostId, count);
      });
      await retryOnConcurrentChange(async () => {
        const current = await ctx.repo.getMachine(model, hostId);
        // an earlier try of this request wrote them (the ids are this request's alone)
        if (ids.every((id) => current.containers.includes(id))) return;
        // the write below is conditional on this read's version, so this check holds at commit
        if (current.life !== 'alive')
          throw new EntityConflictError(`machine ${hostId} is being destroyed`);
        const tx = ctx.repo.transaction();
        guardModelAndApp(tx, model, []);
        for (const id of ids) createMachine(tx, newMachine({ model, id, base, constraints, now }));
        updateMachineMembership(tx, current, {
          principals: current.principals,
          applications: current.applications,
          containers: [...current.containers, ...ids].sort(),
        });
        await ctx.repo.commit(tx);
      });
      await startWorkflows(ctx, model, ids);
      return ids.map((id) => ({ id }));
    }
    const hosts = await requestStep(ctx, 'machineIds', () =>
      ctx.repo.allocateMachineIds(model, count),
    );
    const machines = hosts.flatMap((h) => [
      { ...newMachine({ model, id: h, base, constraints, containers: [`${h}/lxd/0`], now }) },
      newMachine({ model, id: `${h}/lxd/0`, base, constraints, now }),
    ]);
    await writeReservedMachines(ctx, machines);
    await startWorkflows(ctx, model, [...hosts, ...hosts.map((h) => `${h}/lxd/0`)]);
    return hosts.map((h) => ({ id: `${h}/lxd/0` }));
  }

  const manual = placement?.kind === 'ssh';
  const ids = await requestStep(ctx, 'machineIds', () => ctx.repo.allocateMachineIds(model, count));
  // Each workflow is handed what this request writes (and the model's uid, region and mode,
  // fixed for its life), so its first step reads neither; the machines name the model's uid
  // and are written only while the model still has it (state/machines.ts putNewMachines).
  const uid = modelRecord.uid ? modelRecord.uid : undefined;
  const text = placementText(placement);
  const machines = ids.map((id) =>
    newMachine({
      model,
      id,
      base,
      constraints,
      placement: text,
      manual,
      now,
      ...(uid ? { modelUid: uid } : {}),
    }),
  );
  await writeReservedMachines(ctx, machines);
  await startWorkflows(
    ctx,
    model,
    machines.filter(isProvisioned).map((m) => m.id),
    uid
      ? {
          modelUid: uid,
          region: modelRecord.region,
          availabilitySets: modelRecord.availabilitySets,
          base,
          constraints,
          ...(text ? { placement: text } : {}),
          applications: [],
        }
      : undefined,
  );
  return ids.map((id) => ({ id }));
}

/**
 * Writes new machines whose ids this request reserved, one request step per
 * transaction (a host and its containers always in the same one), so a
 * retried request with the same Idempotency-Key writes each once. A
 * transaction an earlier try committed without living to remember its step
 * fails its `attribute_not_exists` conditions: its machines are there, and
 * no one else can have written ids this request reserved, so it counts as
 * written.
 */
async function writeReservedMachines(
  ctx: ServiceContext,
  machines: readonly MachineRecord[],
): Promise<void> {
  let offset = 0;
  for (const chunk of machineWriteChunks(machines)) {
    await requestStep(ctx, `machines-${offset}`, async () => {
      try {
        await ctx.repo.putNewMachines(chunk);
      } catch (err) {
        if (!(err instanceof ConcurrentChangeError) || !(await allRecorded(ctx, chunk))) throw err;
      }
      return true;
    });
    offset += chunk.length;
  }
}

async function allRecorded(
  ctx: ServiceContext,
  machines: readonly MachineRecord[],
): Promise<boolean> {
  const found = await Promise.all(
    machines.map((m) =>
      ctx.repo.getMachine(m.model, m.id).then(
        () => true,
        (err: unknown) => {
          if (err instanceof EntityNotFoundError) return false;
          throw err;
        },
      ),
    ),
  );
  return found.every(Boolean);
}

/**
 * retry-provisioning: only for a machine in `error` (Juju's text otherwise);
 * with constraints, they replace the machine's own first. The workflow then
 * starts again from a fresh zone list.
 */
export async function retryMachine(
  ctx: ServiceContext,
  model: string,
  id: string,
  constraints?: string,
): Promise<void> {
  const modelRecord = await ctx.repo.getModel(model);
  const own = constraints === undefined ? undefined : validateConstraints(constraints).canonical;
  const replacement =
    own === undefined ? undefined : collapseConstraints(modelRecord.constraints, own);
  const notInError = (m: MachineRecord) =>
    new EntityConflictError(
      `machine ${id} is not in an error state (${m.life === 'alive' ? m.status : m.life})`,
    );
  const machine = await ctx.repo.getMachine(model, id);
  if (machine.status !== 'error' || machine.life !== 'alive') throw notInError(machine);
  if (replacement !== undefined) {
    // the retry's own values; the model's stored ones only where the machine cannot launch
    await checkRetryConstraints(
      ctx,
      modelRecord.region,
      own!,
      modelRecord.constraints,
      replacement,
    );
    const tx = ctx.repo.transaction();
    setErrorMachineConstraints(tx, model, id, replacement);
    try {
      await ctx.repo.commit(tx);
    } catch (err) {
      // it left `error` between the read and the write: say where it is now, in Juju's words
      if (err instanceof EntityConflictError)
        throw notInError(await ctx.repo.getMachine(model, id));
      throw err;
    }
  }
  await signalOrUnavailable(ctx, model, id, 'retry', ctx.user ? [{ by: ctx.user }] : []);
}

/**
 * reprovision (Juju's reprovision-machine): only once EC2 confirms the
 * machine's instance is gone (terminated, or no longer listed); any failure
 * to ask EC2 refuses (fail closed), and so does an instance launched moments
 * ago that EC2 does not list yet (its listing is eventually consistent: the
 * sweep's rule, core/liveness.ts `observedState`). EC2 is asked by the
 * instance's id. The machine keeps its id, base, constraints and units.
 *
 * The request writes nothing itself: it tells the machine's workflow, which
 * forgets the instance (only while the machine still records it), gives up
 * its zone and launches a new one through the normal zone choice — one step
 * that completes or is repeated. When Temporal cannot be told, the request
 * fails `503 unavailable` with the machine as it was, and repeating it once
 * Temporal is back completes it.
 */
export async function reprovisionMachine(
  ctx: ServiceContext,
  model: string,
  id: string,
): Promise<void> {
  const modelRecord = await ctx.repo.getModel(model);
  const machine = await ctx.repo.getMachine(model, id);
  if (machine.life !== 'alive') throw new EntityConflictError(`machine ${id} is being destroyed`);
  if (!isProvisioned(machine)) {
    throw new EntityConflictError(`machine ${id} is not provisioned by the provisioner`);
  }
  const instanceId = machine.instanceId;
  if (!instanceId) {
    throw new EntityConflictError(`machine ${id} has no instance to replace (${machine.status})`);
  }
  if (!ctx.instances) {
    throw new EntityConflictError(`cannot confirm instance "${instanceId}" is gone: EC2 unknown`);
  }
  let listed;
  try {
    listed = await ctx.instances.state(modelRecord.region, instanceId);
  } catch (err) {
    throw new EntityConflictError(
      `cannot confirm instance "${instanceId}" is gone: EC2 could not be asked (${
        err instanceof Error ? err.name : String(err)
      })`,
    );
  }
  const state = observedState(machine, listed, Date.now());
  if (state === undefined) throw new EntityConflictError(unlistedYetMessage(instanceId));
  if (!isConfirmedGone(state)) {
    throw new EntityConflictError(liveInstanceMessage(id, instanceId, state));
  }
  await signalOrUnavailable(ctx, model, id, 'reprovision', [
    { instanceId, ...(ctx.user ? { by: ctx.user } : {}) },
  ]);
  ctx.log.info('reprovisioning', { model, machineId: id, instanceId, state });
}

/**
 * Signals the machine's workflow; when Temporal cannot be reached, a
 * `503 unavailable` that says the request may be repeated (what the signal
 * asks is done by the workflow, so nothing was written here).
 */
async function signalOrUnavailable(
  ctx: ServiceContext,
  model: string,
  id: string,
  signal: 'retry' | 'reprovision',
  args: unknown[] = [],
): Promise<void> {
  try {
    await ctx.workflows.signal(model, id, signal, args, ctx.user);
  } catch (err) {
    // a permanent refusal (permission denied, unknown namespace, bad argument) is no 503
    if (!isWorkflowServiceUnavailable(err)) throw err;
    ctx.log.warn('could not signal the machine workflow', {
      model,
      machineId: id,
      signal,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
    });
    throw new DependencyUnavailableError(
      `cannot reach the workflow service to ${signal} machine ${id}; try again`,
    );
  }
}
