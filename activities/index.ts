import type { ActivityDeps } from './deps';
import { launchActivities } from './launch';
import { PlacementGroups } from './placement-groups';
import { recordActivities } from './records';
import { ssmActivities } from './ssm';
import { starterActivities } from './starter';
import { sweepActivities } from './sweep';
import { teardownActivities } from './teardown';

export type { ActivityDeps } from './deps';

/** Every activity the provisioner's workflows call, built from injected clients. */
export function createActivities(deps: ActivityDeps) {
  // shared: a group deleted by a removal is created again by the next launch
  const groups = new PlacementGroups(deps.ec2ForRegion);
  return {
    ...recordActivities(deps, groups),
    ...launchActivities(deps, groups),
    ...teardownActivities(deps),
    ...sweepActivities(deps),
    ...starterActivities(deps),
    ...ssmActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
