import type { LaunchPlan } from '../../activities/types';

/** A machine's launch plan as the launch tests use it: an m5.large in us-east-1 from `ami-1`. */
export const M5_LARGE_PLAN: LaunchPlan = {
  region: 'us-east-1',
  instanceType: 'm5.large',
  imageId: 'ami-1',
  hardware: { arch: 'amd64', cores: 2, mem: 8192, rootDisk: 8192 },
  zonesConstraint: [],
  applications: [],
};
