export { machine, machineWorkflow } from './machine';
export { sweeperWorkflow } from './sweeper';
export { startMachinesWorkflow } from './starter';
export { modelSweepWorkflow } from './legacy';
