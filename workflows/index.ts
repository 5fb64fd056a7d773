export { machine, machineWorkflow } from './machine';
export { sweeperWorkflow } from './sweeper';
export { startMachinesWorkflow } from './starter';
export { removalWorkflow } from './removal';
export { modelSweepWorkflow } from './legacy';
