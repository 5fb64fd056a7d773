import type { ActivityDeps } from './deps';
import { launchActivities } from './launch';
import { recordActivities } from './records';
import { starterActivities } from './starter';
import { sweepActivities } from './sweep';
import { teardownActivities } from './teardown';

export type { ActivityDeps } from './deps';

/** Every activity the provisioner's workflows call, built from injected clients. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...recordActivities(deps),
    ...launchActivities(deps),
    ...teardownActivities(deps),
    ...sweepActivities(deps),
    ...starterActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
