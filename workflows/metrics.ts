import { proxySinks, type Sinks } from '@temporalio/workflow';

/**
 * Metric events a workflow reports to its worker (worker/telemetry.ts turns
 * them into the worker's EMF counters). A sink call adds nothing to the
 * history, and the worker does not call it again during replay.
 */
export interface ProvisionerSinks extends Sinks {
  metrics: {
    /** A teardown newly blocked (workflows/teardown.ts `sayBlocked`). */
    teardownBlocked(): void;
  };
}

export const { metrics } = proxySinks<ProvisionerSinks>();
