export { machineWorkflow } from './machine';
