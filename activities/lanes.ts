export { inLanes } from '../core/lanes';

/**
 * Machines one model's sweep handles at once: workflows checked and started
 * (activities/sweep-reconcile.ts), routine instance states written
 * (activities/sweep-liveness.ts).
 */
export const SWEEP_MACHINE_LANES = 8;
