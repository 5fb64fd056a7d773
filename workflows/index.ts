export { machineWorkflow } from './machine';
export { modelSweepWorkflow } from './sweep';
