import type { ActivityDeps } from './deps';
import { refusingPermanent } from './failures';
import { InstanceOwners } from './instance-owners';
import { launchActivities } from './launch';
import { PlacementGroups } from '../ec2/placement-groups';
import { RecentReads } from './recent-reads';
import { recordActivities } from './records';
import { removalActivities } from './removal';
import { ssmActivities } from './ssm';
import { starterActivities } from './starter';
import { sweepActivities } from './sweep';
import { sweeperActivities } from './sweeper';
import { teardownActivities } from './teardown';

export type { ActivityDeps } from './deps';

/** Every activity the provisioner's workflows call, built from injected clients. */
export function createActivities(given: ActivityDeps) {
  const deps: ActivityDeps = { ...given, recentReads: given.recentReads ?? new RecentReads() };
  // shared: a group deleted by a removal is created again by the next launch
  const groups = new PlacementGroups(deps.ec2ForRegion);
  // which machine each instance was launched for, from the batches' records (teardown, sweep)
  const owners = new InstanceOwners(deps.store.batches);
  const sweep = sweepActivities(deps, owners);
  // not an activity: the step a machine's first read takes with it (records.ts loadMachine)
  const { prepareLaunch, ...launch } = launchActivities(deps, groups);
  return {
    ...refusingPermanent(recordActivities(deps, groups, prepareLaunch)),
    ...refusingPermanent(launch),
    ...refusingPermanent(teardownActivities(deps, owners)),
    ...sweep,
    ...sweeperActivities(deps, (input, listings) => sweep.sweepModel(input, listings)),
    ...starterActivities(deps),
    ...removalActivities(deps),
    ...ssmActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
