import type { MachineView, StatusView } from './views';
import type { MachineRecord, UnitRecord } from '../state/types';
import type { ServiceContext } from './context';

/** A machine as status and `GET …/machines/{id}` answer it (its schema: functions/schemas.ts). */
export type { MachineView };

/** Machine ids in Juju's order: numerically by each path segment (`2` < `10`, `1` < `1/lxd/0`). */
export function compareMachineIds(a: string, b: string): number {
  const pa = a.split('/');
  const pb = b.split('/');
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const nx = Number(x);
    const ny = Number(y);
    const d = Number.isNaN(nx) || Number.isNaN(ny) ? x.localeCompare(y) : nx - ny;
    if (d !== 0) return d;
  }
  return 0;
}

/** Unit names in order: by application, then number (`app/2` < `app/10`). */
export function compareUnitNames(a: string, b: string): number {
  const [appA = '', nA = '0'] = a.split('/');
  const [appB = '', nB = '0'] = b.split('/');
  return appA.localeCompare(appB) || Number(nA) - Number(nB);
}

export function machineView(m: MachineRecord): MachineView {
  return {
    id: m.id,
    base: m.base,
    life: m.life,
    status: m.status,
    message: m.message,
    ...(m.errorCount ? { errorCount: m.errorCount } : {}),
    ...(m.instanceId ? { instanceId: m.instanceId } : {}),
    ...(m.instanceId && m.instanceStatus ? { instanceStatus: m.instanceStatus } : {}),
    ...(m.imageId ? { imageId: m.imageId } : {}),
    ...(m.zone ? { zone: m.zone } : {}),
    ...(m.instanceType ? { instanceType: m.instanceType } : {}),
    constraints: m.constraints,
    ...(m.hardware ? { hardware: m.hardware } : {}),
    ...(m.pricePerHour !== undefined ? { pricePerHour: m.pricePerHour } : {}),
    ...(m.placementGroup !== undefined ? { placementGroup: m.placementGroup } : {}),
    ...(m.partition !== undefined ? { partition: m.partition } : {}),
    units: [...m.principals].sort(compareUnitNames),
    containers: [...m.containers].sort(compareMachineIds),
    ...machineTimesAndAddresses(m),
  };
}

/**
 * What `juju status` shows besides the state: how old the instance state is,
 * the instance's addresses (only while it records the instance they belong
 * to), what a manual machine is, and when the machine was added and last
 * changed.
 */
function machineTimesAndAddresses(m: MachineRecord): Partial<MachineView> {
  return {
    ...(m.instanceId && m.instanceStatus && m.instanceStatusAt
      ? { instanceStatusAt: m.instanceStatusAt }
      : {}),
    ...(m.instanceId && m.privateAddress ? { privateAddress: m.privateAddress } : {}),
    ...(m.instanceId && m.publicAddress ? { publicAddress: m.publicAddress } : {}),
    ...(m.manual && m.placement ? { placement: m.placement } : {}),
    ...(m.createdAt ? { createdAt: m.createdAt } : {}),
    ...(m.updatedAt ? { updatedAt: m.updatedAt } : {}),
  };
}

/** A unit's status follows its machine: deployed once the machine runs, error when it failed or its instance was lost. */
export function unitStatus(
  machine: MachineRecord | undefined,
): 'allocating' | 'deployed' | 'error' {
  if (machine?.status === 'running') return 'deployed';
  if (machine?.status === 'error' || machine?.status === 'down') return 'error';
  return 'allocating';
}

/**
 * The model's on-demand USD per hour: the sum over its running machines that
 * carry a price (rounded to 6 decimals, so sums of AWS's 4-decimal prices
 * read as written); undefined when none does.
 */
export function modelPricePerHour(machines: readonly MachineRecord[]): number | undefined {
  const priced = machines.filter((m) => m.status === 'running' && m.pricePerHour !== undefined);
  if (priced.length === 0) return undefined;
  const sum = priced.reduce((total, m) => total + (m.pricePerHour ?? 0), 0);
  return Math.round(sum * 1e6) / 1e6;
}

/** A model's status, built from one Query of the model's partition. */
export async function modelStatus(ctx: ServiceContext, model: string): Promise<StatusView> {
  const contents = await ctx.repo.loadModel(model);
  const machines = new Map(contents.machines.map((m) => [m.id, m]));
  const unitsByApp = new Map<string, UnitRecord[]>();
  for (const u of contents.units)
    unitsByApp.set(u.application, [...(unitsByApp.get(u.application) ?? []), u]);
  const sortedMachines = [...contents.machines].sort((a, b) => compareMachineIds(a.id, b.id));
  const apps = [...contents.applications].sort((a, b) => a.name.localeCompare(b.name));
  const pricePerHour = modelPricePerHour(contents.machines);
  return {
    model: {
      name: contents.model.name,
      region: contents.model.region,
      constraints: contents.model.constraints,
      ...(pricePerHour !== undefined ? { pricePerHour } : {}),
    },
    machines: Object.fromEntries(sortedMachines.map((m) => [m.id, machineView(m)])),
    applications: Object.fromEntries(
      apps.map((a) => [
        a.name,
        {
          base: a.base,
          constraints: a.constraints,
          subordinate: a.subordinate,
          units: Object.fromEntries(
            (unitsByApp.get(a.name) ?? [])
              .sort((x, y) => compareUnitNames(x.name, y.name))
              .map((u) => [
                u.name,
                {
                  machine: u.machine,
                  life: u.life,
                  status: unitStatus(machines.get(u.machine)),
                  subordinates: [...u.subordinates].sort(compareUnitNames),
                },
              ]),
          ),
        },
      ]),
    ),
  };
}

export async function getMachine(
  ctx: ServiceContext,
  model: string,
  id: string,
): Promise<MachineView> {
  await ctx.repo.getModel(model);
  return machineView(await ctx.repo.getMachine(model, id));
}
