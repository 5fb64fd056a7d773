/**
 * Liveness (DESIGN.md): what EC2's view of an instance means for its machine.
 * Pure: the sweep, the state-change handler and the API all decide with these.
 */

/** EC2's instance states, and `unknown` when EC2 no longer lists the instance. */
export const INSTANCE_STATES = [
  'pending',
  'running',
  'stopping',
  'stopped',
  'shutting-down',
  'terminated',
  'unknown',
] as const;

/** EC2's instance state as the provisioner last saw it; `unknown` when EC2 no longer lists the instance. */
export type InstanceState = (typeof INSTANCE_STATES)[number];

export function isInstanceState(value: unknown): value is InstanceState {
  return typeof value === 'string' && (INSTANCE_STATES as readonly string[]).includes(value);
}

/** States in which the instance is gone or going: its machine is `down` (API.md). */
/** EC2's state of an instance (its `State.Name`), as the liveness checks name it. */
export function instanceState(instance: {
  State?: { Name?: string | undefined } | undefined;
}): InstanceState | undefined {
  const name = instance.State?.Name;
  return isInstanceState(name) ? name : undefined;
}

export function isLost(state: InstanceState): boolean {
  return state === 'terminated' || state === 'shutting-down' || state === 'unknown';
}

/**
 * Routine news: the instance is starting or runs. Whoever hears it (the
 * sweep, the state-change handler) writes it to the machine itself, while
 * the machine is `running` and records its instance starting or running
 * (ProvisioningStore.recordRoutineInstanceState); every other state, and
 * routine news for a machine `down`, stopped or dying, goes to the machine's
 * workflow, which decides (down, back up, its containers, reprovision).
 */
export function isRoutine(state: InstanceState): boolean {
  return state === 'pending' || state === 'running';
}

/** States in which EC2 confirms the instance is gone, so a new one may replace it (reprovision). */
export function isConfirmedGone(state: InstanceState): boolean {
  return state === 'terminated' || state === 'unknown';
}

/** The machine's message for an instance state worth saying (lost or stopped); '' otherwise. */
export function instanceStateMessage(instanceId: string, state: InstanceState): string {
  if (state === 'unknown') return `instance "${instanceId}" is no longer listed by EC2`;
  if (isLost(state) || state === 'stopped' || state === 'stopping') {
    return `instance "${instanceId}" is ${state}`;
  }
  return '';
}

/**
 * How long after an instance is recorded EC2's not listing it says nothing
 * (its listing is eventually consistent; it catches up within seconds to a
 * few minutes). Past this, an instance still not listed is gone.
 */
export const UNLISTED_GRACE_MS = 10 * 60_000;

/** What the machine records of its instance, for `observedState`. */
export interface RecordedInstance {
  instanceStatus?: InstanceState;
  /** When the instance was recorded (ISO); absent on records written before it was kept. */
  instanceRecordedAt?: string;
  /** The record's last write (ISO): the recording time of a record without `instanceRecordedAt`. */
  updatedAt?: string;
}

/**
 * What EC2's answer says of a machine's instance: the state EC2 listed it
 * in, or `unknown` when it did not list it — except for an instance the
 * machine records as `pending` and recorded less than UNLISTED_GRACE_MS ago
 * (launched moments ago, not yet seen by liveness): EC2's listing is
 * eventually consistent, so its absence says nothing yet, and the answer is
 * undefined (not known). Past the window it is `unknown`, so an instance EC2
 * lost before liveness ever saw it does not leave its machine stuck. The
 * sweep, the sweep's own reprovisioning and the API's reprovision all decide
 * with this.
 */
export function observedState(
  recorded: RecordedInstance,
  listed: InstanceState | undefined,
  now: number,
): InstanceState | undefined {
  if (listed !== undefined) return listed;
  if (recorded.instanceStatus !== 'pending') return 'unknown';
  const at = Date.parse(recorded.instanceRecordedAt ?? recorded.updatedAt ?? '');
  // a record that says nothing of when: old enough (never stuck for want of a date)
  if (Number.isNaN(at)) return 'unknown';
  return now - at < UNLISTED_GRACE_MS ? undefined : 'unknown';
}

/** Why a reprovision is refused while the instance lives (Juju's reprovision-machine wording). */
export function liveInstanceMessage(
  machineId: string,
  instanceId: string,
  state: InstanceState,
): string {
  return `machine ${machineId} has a live instance "${instanceId}" (${state})`;
}

/** Why a reprovision is refused while EC2 does not list a just-launched instance yet. */
export function unlistedYetMessage(instanceId: string): string {
  return `cannot confirm instance "${instanceId}" is gone: EC2 does not list it yet (launched moments ago)`;
}

/** Splits ids into DescribeInstances-sized batches (EC2 takes up to 1,000 per filter). */
export function batches<T>(items: readonly T[], size = 1000): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export interface ObservedMachine {
  id: string;
  life: 'alive' | 'dying' | 'dead';
  status: string;
  instanceId?: string;
  instanceStatus?: InstanceState;
  instanceRecordedAt?: string;
  updatedAt?: string;
  manual?: boolean;
}

export interface InstanceChange {
  machineId: string;
  instanceId: string;
  state: InstanceState;
}

/**
 * The machines whose instance state EC2 reports differently from what is
 * recorded. `observed` holds what EC2 listed; a recorded id it lacks is
 * `unknown`. Dead machines (teardown owns them) and manual ones are left out.
 */
export function instanceChanges(
  machines: readonly ObservedMachine[],
  observed: ReadonlyMap<string, InstanceState>,
  now: number,
): InstanceChange[] {
  const changes: InstanceChange[] = [];
  for (const m of machines) {
    if (!m.instanceId || m.manual || m.life === 'dead') continue;
    // EC2's listing is eventually consistent: a just-launched instance may be missing for a while
    const state = observedState(m, observed.get(m.instanceId), now);
    if (state === undefined) continue;
    const downAlready = m.status === 'down';
    // a lost instance on a machine not yet `down` is a change even if the state was recorded
    if (state !== m.instanceStatus || (isLost(state) && !downAlready && m.life === 'alive')) {
      changes.push({ machineId: m.id, instanceId: m.instanceId, state });
    }
  }
  return changes;
}
