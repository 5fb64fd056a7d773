import type { MachineRecord, ModelRecord } from '../state/types';
import type { ImageFinder } from './images';
import type { InstanceTypeCatalogue } from './instance-types';
import type { LaunchPlan } from './types';

// TEMPORARY until core/ lands.
export async function planLaunch(deps: {
  model: ModelRecord;
  machine: MachineRecord;
  images: ImageFinder;
  catalogue: InstanceTypeCatalogue;
}): Promise<LaunchPlan> {
  const types = (await deps.catalogue.all())
    .filter(
      (t) => t.currentGeneration && t.arches.includes('amd64') && t.cores >= 1 && t.mem >= 2048,
    )
    .sort((a, b) => a.mem - b.mem || a.cores - b.cores || a.name.localeCompare(b.name));
  const t = types[0]!;
  const version = deps.machine.base.split('@')[1] ?? '24.04';
  const codename = { '20.04': 'focal', '22.04': 'jammy', '24.04': 'noble' }[version] ?? 'noble';
  const imageId = await deps.images.find({
    region: deps.model.region,
    version,
    codename,
    arch: 'amd64',
  });
  const zone = deps.machine.placement?.startsWith('zone=') ? [deps.machine.placement.slice(5)] : [];
  return {
    region: deps.model.region,
    instanceType: t.name,
    imageId,
    hardware: { arch: 'amd64', cores: t.cores, mem: t.mem },
    allowedZones: zone,
  };
}

export function orderZones(input: {
  machineId: string;
  zones: { name: string; state: string }[];
  population: Record<string, number>;
  failedZones: string[];
  allowedZones: string[];
}): string[] {
  return input.zones
    .filter((z) => z.state === 'available' && !input.failedZones.includes(z.name))
    .filter((z) => input.allowedZones.length === 0 || input.allowedZones.includes(z.name))
    .sort(
      (a, b) =>
        (input.population[a.name] ?? 0) - (input.population[b.name] ?? 0) ||
        a.name.localeCompare(b.name),
    )
    .map((z) => z.name);
}
