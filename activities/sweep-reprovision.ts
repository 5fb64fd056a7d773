import type { InstanceState } from '../core';
import type { ActivityDeps } from './deps';
import { selectReprovisions, watchedMachines, type SweptMachine } from './sweep-predicates';
import { signalFailed, signalMachine } from './sweep-signals';

/**
 * Reprovisioning policy (`reprovisionLost`): machines whose instance this
 * sweep saw gone are told to launch a new one, capped per sweep (the choice
 * is selectReprovisions in sweep-predicates.ts). Answers the machines told.
 */
export async function reprovisionLost(
  deps: ActivityDeps,
  model: string,
  machines: readonly SweptMachine[],
  observed: ReadonlyMap<string, InstanceState>,
): Promise<string[]> {
  const done: string[] = [];
  const chosen = selectReprovisions({
    machines: watchedMachines(machines),
    observed,
    cap: deps.tuning.reprovisionCap,
    now: (deps.now ?? Date.now)(),
  });
  for (const { machineId, instanceId } of chosen) {
    // The workflow forgets the instance and launches anew, only while the machine still
    // records it: one step it completes or repeats. Nothing is written here, so a signal
    // that fails leaves the machine as it was, and the next sweep chooses it again.
    try {
      if (!(await signalMachine(deps, model, machineId, 'reprovision', [{ instanceId }]))) continue;
    } catch (err) {
      // one machine's failure stops neither the others nor the model's liveness
      signalFailed(model, machineId, 'reprovision', err);
      continue;
    }
    done.push(machineId);
  }
  return done;
}
