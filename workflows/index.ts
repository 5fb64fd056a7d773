export { machine, machineWorkflow } from './machine';
export { modelSweepWorkflow } from './sweep';
export { startMachinesWorkflow } from './starter';
