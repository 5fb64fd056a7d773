import { FAILURE } from '../temporal/failures';
import { everyZoneFailedMessage } from '../temporal/messages';

/**
 * The launch's failover policy, pure: what a provisioning pass does after a
 * zone claim or a launch failed, by the failure's type (temporal/failures.ts).
 * Juju's provisioner: a zone-specific error moves on to the next zone without
 * spending an attempt; a zone-independent one, or every zone failed, spends
 * the attempt (and waits); an error no zone or attempt can fix ends the pass
 * in `error` now. workflows/launch.ts carries the decisions out (writes,
 * releases, waits); nothing here touches Temporal, so it is unit-tested alone.
 */

/** After a zone claim failed. */
export type ClaimFailureDecision =
  /** EC2 refused what no zone can fix: the machine's `error`, now. */
  | { kind: 'error' }
  /** The attempt is spent; `lastError` is its cause. */
  | { kind: 'spend-attempt'; lastError: string }
  /** Not a failure this policy knows: the caller re-throws it. */
  | { kind: 'rethrow' };

/**
 * `type` and `message`: the claim's failure; `failedZones`: the zones this
 * attempt already failed in; `lastError`: the cause so far.
 */
export function afterClaimFailure(
  type: string | undefined,
  message: string,
  failedZones: readonly string[],
  lastError: string,
): ClaimFailureDecision {
  if (type === FAILURE.ec2Refused) return { kind: 'error' };
  // the claim could not be made (contended): spend the attempt
  if (type === FAILURE.startFailed) return { kind: 'spend-attempt', lastError: message };
  if (type !== FAILURE.noSuitableZone) return { kind: 'rethrow' };
  // no zone left: after zone failures the last of them is the cause; with none, this is
  // (and with more than one, the cause names every zone tried, so status and the CLI say so)
  return {
    kind: 'spend-attempt',
    lastError: failedZones.length === 0 ? message : everyZoneFailedMessage(failedZones, lastError),
  };
}

/** After a launch (StartInstance) failed. */
export type LaunchFailureDecision =
  /** The machine is gone: stop the pass. */
  | 'stop'
  /** EC2 refused what no zone or attempt can fix: release the zone, `error` now, with EC2's code. */
  | 'error'
  /** A zone-specific failure: the next zone, the attempt not spent. */
  | 'next-zone'
  /** A zone-independent failure: the attempt is spent. */
  | 'spend-attempt'
  /**
   * Out of retries or timed out (batched launches): EC2 may have launched; the
   * attempt is spent and the next launch looks for the instance first.
   */
  | 'spend-attempt-may-have-launched'
  /** Not a failure this policy knows: the caller re-throws it. */
  | 'rethrow';

export function afterLaunchFailure(
  type: string | undefined,
  batched: boolean,
): LaunchFailureDecision {
  if (type === FAILURE.machineGone) return 'stop';
  if (type === FAILURE.ec2Refused) return 'error';
  if (type === FAILURE.zoneUnavailable) return 'next-zone';
  if (type === FAILURE.startFailed) return 'spend-attempt';
  return batched ? 'spend-attempt-may-have-launched' : 'rethrow';
}
