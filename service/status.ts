import type { MachineRecord } from '../state/types';
import type { ServiceContext } from './context';

export interface MachineView {
  id: string;
  base: string;
  life: string;
  status: string;
  message: string;
  instanceId?: string;
  imageId?: string;
  zone?: string;
  instanceType?: string;
  constraints: string;
  hardware?: MachineRecord['hardware'];
  units: string[];
  containers: string[];
}

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

export function machineView(m: MachineRecord): MachineView {
  return {
    id: m.id,
    base: m.base,
    life: m.life,
    status: m.status,
    message: m.message,
    ...(m.instanceId ? { instanceId: m.instanceId } : {}),
    ...(m.imageId ? { imageId: m.imageId } : {}),
    ...(m.zone ? { zone: m.zone } : {}),
    ...(m.instanceType ? { instanceType: m.instanceType } : {}),
    constraints: m.constraints,
    ...(m.hardware ? { hardware: m.hardware } : {}),
    units: [],
    containers: [],
  };
}

export async function modelStatus(ctx: ServiceContext, model: string) {
  const [record, machines] = await Promise.all([
    ctx.repo.getModel(model),
    ctx.repo.listMachines(model),
  ]);
  machines.sort((a, b) => compareMachineIds(a.id, b.id));
  return {
    model: { name: record.name, region: record.region, constraints: record.constraints },
    machines: Object.fromEntries(machines.map((m) => [m.id, machineView(m)])),
    applications: {},
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
