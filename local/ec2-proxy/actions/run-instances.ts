import type { ServerResponse } from 'node:http';
import type { Ec2Call, ProxyState } from '../call';
import { forwardCall, sendAnswer, sendEc2Error, sendRefusal, sendXml, sleep } from '../call';
import {
  ec2ErrorCode,
  ec2ErrorStatus,
  ec2ErrorXml,
  faultMessage,
  IDEMPOTENT_INSTANCE_TERMINATED,
  IDEMPOTENT_PARAMETER_MISMATCH,
  newRequestId,
  REQUEST_LIMIT_EXCEEDED,
} from '../errors';
import { alternativeZones } from '../faults';
import type { LaunchRecord } from '../idempotency';
import { decideReplay, idempotencyKey, launchFingerprint } from '../idempotency';
import type { TrackedInstance } from '../instances';
import { assignPartitions, rewriteRunInstances } from '../instances';
import { pendingToRunningMs, runInstancesAnswerMs } from '../latency';
import type { Ec2Refusal, ResolvedPlacement } from '../placement';
import { groupKey, parsePlacementRequest, PLACEMENT_PARAMS, resolvePlacement } from '../placement';
import type { QueryParams } from '../query';
import { encodeQuery, paramValue } from '../query';
import type { LaunchTarget, RunInstancesRequest } from '../run';
import {
  parseDescribeInstancesResponse,
  parseRunInstances,
  parseRunInstancesResponse,
  resolveLaunchTarget,
  responseNamespace,
  runInstancesResponseXml,
} from '../run';
import type { UpstreamAnswer } from '../upstream';
import { endToEndHeaders } from '../upstream';

/**
 * RunInstances (the proxy's header comment in ../ec2-proxy.ts says what EC2
 * behaviour each step adds): target zone, the zone's fault, idempotency by
 * ClientToken with replay from moto's DescribeInstances, the launched-instances
 * bucket, placement groups and partitions.
 */
export async function runInstances(
  state: ProxyState,
  call: Ec2Call,
  res: ServerResponse,
): Promise<void> {
  const run = parseRunInstances(call.params);
  if (run.dryRun) return forwardCall(state, call, res);
  const target = await resolveLaunchTarget(run, call.scope.region, (subnetId) =>
    state.moto.subnetZone(call, subnetId),
  );
  if (!target) return forwardCall(state, call, res);
  if (!run.clientToken) {
    await launchOnce(state, call, res, run, target, '');
    return;
  }
  const key = idempotencyKey(
    call.scope,
    target.explicit ? target.zone : undefined,
    run.clientToken,
  );
  const fingerprint = launchFingerprint(call.params);
  for (;;) {
    const acquired = await state.idempotency.acquire(key);
    if (acquired.kind === 'owner') {
      let record: LaunchRecord | undefined;
      try {
        record = await launchOnce(state, call, res, run, target, fingerprint);
      } finally {
        acquired.release(record);
      }
      return;
    }
    if (decideReplay(acquired.record, fingerprint) === 'mismatch') {
      const { code, message } = IDEMPOTENT_PARAMETER_MISMATCH;
      sendEc2Error(res, code, message);
      return;
    }
    const replayed = await replay(state, call, acquired.record);
    if (replayed.kind === 'answer') {
      sendXml(res, replayed.status, replayed.xml);
      return;
    }
    state.idempotency.forget(key);
  }
}

/** Launches (or injects the zone's fault); returns the record to hold the token with, if it succeeded. */
async function launchOnce(
  state: ProxyState,
  call: Ec2Call,
  res: ServerResponse,
  run: RunInstancesRequest,
  target: LaunchTarget,
  fingerprint: string,
): Promise<LaunchRecord | undefined> {
  if (await answerFault(state, call, res, run, target)) return undefined;
  const placement = resolvePlacement(parsePlacementRequest(call.params), (name) =>
    state.placementGroups.get(call.scope, name),
  );
  if (!placement.ok) {
    sendRefusal(res, placement.error);
    return undefined;
  }
  const counts = launchCounts(call.params);
  if (!counts.ok) {
    sendRefusal(res, counts.error);
    return undefined;
  }
  const region = call.scope.region;
  const granted = state.admin.limiter.launchable(region, counts.min, counts.max);
  if (granted === 0) {
    state.admin.stats.throttle();
    sendEc2Error(res, REQUEST_LIMIT_EXCEEDED.code, REQUEST_LIMIT_EXCEEDED.message);
    return undefined;
  }
  const answer = await fetchWith(state, call, PLACEMENT_PARAMS, {
    MinCount: String(granted),
    MaxCount: String(granted),
  }).catch((err: unknown) => {
    state.admin.limiter.unlaunched(region, granted);
    throw err;
  });
  if (answer.status !== 200) {
    state.admin.limiter.unlaunched(region, granted);
    sendAnswer(res, answer);
    return undefined;
  }
  const launched = parseRunInstancesResponse(answer.body);
  if (!launched) {
    sendAnswer(res, answer);
    return undefined;
  }
  state.admin.limiter.unlaunched(region, granted - launched.instanceIds.length);
  recordLaunch(state, call, launched.instanceIds, placement.value);
  const pendingMs = pendingToRunningMs(state.admin.latency);
  const body = rewriteRunInstances(answer.body, (id) => state.instances.view(id, pendingMs));
  const hold = runInstancesAnswerMs(state.admin.latency);
  if (hold > 0) await sleep(hold);
  sendAnswer(res, { ...answer, body });
  return { fingerprint, ...launched, responseBody: body };
}

/** Remembers launched instances: their launch time and placement group / partition. */
function recordLaunch(
  state: ProxyState,
  call: Ec2Call,
  instanceIds: readonly string[],
  placement: ResolvedPlacement | undefined,
): void {
  instanceIds.forEach((id) => state.launchedIn.set(id, call.scope.region));
  if (!placement) {
    instanceIds.forEach((id) => state.instances.record(id, {}));
    return;
  }
  const { group } = placement;
  const key = groupKey(call.scope, group.groupName);
  const partitions =
    group.partitionCount === undefined
      ? []
      : placement.partitionNumber !== undefined
        ? instanceIds.map(() => placement.partitionNumber)
        : assignPartitions(
            state.instances.partitionLoad(key, group.partitionCount),
            instanceIds.length,
          );
  instanceIds.forEach((id, i) => {
    const partitionNumber = partitions[i];
    const tracked: Omit<TrackedInstance, 'launchedAt'> = {
      groupName: group.groupName,
      groupKey: key,
      ...(partitionNumber === undefined ? {} : { partitionNumber }),
    };
    state.instances.record(id, tracked);
  });
}

/** Sends the call to moto with `drop` parameters taken out and `set` ones replaced (or added). */
function fetchWith(
  state: ProxyState,
  call: Ec2Call,
  drop: ReadonlySet<string>,
  set: Readonly<Record<string, string>>,
): Promise<UpstreamAnswer> {
  const edit = (params: QueryParams): Array<[string, string]> =>
    params
      .filter(([k]) => !drop.has(k))
      .map(([k, v]): [string, string] => [k, Object.hasOwn(set, k) ? (set[k] ?? v) : v]);
  const query = edit(call.queryParams);
  const form = edit(call.formParams);
  const present = new Set([...query, ...form].map(([k]) => k));
  const missing = Object.entries(set).filter(([k]) => !present.has(k));
  const useForm = call.formParams.length > 0 || call.queryParams.length === 0;
  (useForm ? form : query).push(...missing);
  const path =
    call.pathname + (call.queryParams.length > 0 || !useForm ? `?${encodeQuery(query)}` : '');
  const body = useForm ? Buffer.from(encodeQuery(form)) : call.body;
  const headers = endToEndHeaders(call.headers);
  if (useForm) headers['content-type'] = 'application/x-www-form-urlencoded; charset=utf-8';
  return state.upstream.fetch(call.method, path, headers, body);
}

type ReplayOutcome =
  | { readonly kind: 'answer'; readonly status: number; readonly xml: string }
  | { readonly kind: 'gone' };

/**
 * The answer to a retry: the reservation as it is now (DescribeInstances by
 * the original instance ids), as EC2 answers; moto's original answer when
 * it cannot be described; `gone` when moto no longer knows the instances.
 */
async function replay(
  state: ProxyState,
  call: Ec2Call,
  record: LaunchRecord,
): Promise<ReplayOutcome> {
  const original: ReplayOutcome = { kind: 'answer', status: 200, xml: record.responseBody };
  if (record.instanceIds.length === 0) return original;
  const described = await state.moto.ask(call, [
    ['Action', 'DescribeInstances'],
    ...record.instanceIds.map((id, i): [string, string] => [`InstanceId.${i + 1}`, id]),
  ]);
  if (described.status !== 200) {
    return ec2ErrorCode(described.body) === 'InvalidInstanceID.NotFound'
      ? { kind: 'gone' }
      : original;
  }
  const reservation = parseDescribeInstancesResponse(described.body).find(
    (r) => r.reservationId === record.reservationId,
  );
  if (!reservation) return original;
  if ([...reservation.instanceStates.values()].includes('terminated')) {
    const { code, message } = IDEMPOTENT_INSTANCE_TERMINATED;
    return {
      kind: 'answer',
      status: ec2ErrorStatus(code),
      xml: ec2ErrorXml(code, message, newRequestId()),
    };
  }
  const namespace = responseNamespace(record.responseBody);
  const pendingMs = pendingToRunningMs(state.admin.latency);
  const viewOf = (id: string) => state.instances.view(id, pendingMs);
  return {
    kind: 'answer',
    status: 200,
    xml: rewriteRunInstances(
      runInstancesResponseXml(reservation, namespace, newRequestId()),
      viewOf,
    ),
  };
}

/** Answers with the target zone's fault, if it has one; true when it did. */
async function answerFault(
  state: ProxyState,
  call: Ec2Call,
  res: ServerResponse,
  run: RunInstancesRequest,
  target: LaunchTarget,
): Promise<boolean> {
  const faults = state.admin.faults;
  const code = faults.zones[target.zone];
  if (code === undefined) return false;
  const subnetId =
    target.subnetId ??
    (code === 'InsufficientFreeAddressesInSubnet'
      ? await state.moto.defaultSubnet(call, target.zone)
      : undefined);
  const message = faultMessage(code, {
    zone: target.zone,
    instanceType: run.instanceType,
    alternativeZones: alternativeZones(await state.moto.zones(call), target.zone, faults),
    ...(subnetId ? { subnetId } : {}),
  });
  state.admin.stats.inject(code);
  sendEc2Error(res, code, message);
  return true;
}

type LaunchCounts =
  | { readonly ok: true; readonly min: number; readonly max: number }
  | { readonly ok: false; readonly error: Ec2Refusal };

/** RunInstances' MinCount / MaxCount (each defaulting to the other, then 1), checked as EC2 does. */
function launchCounts(params: QueryParams): LaunchCounts {
  const rawMin = paramValue(params, 'MinCount');
  const rawMax = paramValue(params, 'MaxCount');
  const min = Number(rawMin ?? rawMax ?? '1');
  const max = Number(rawMax ?? rawMin ?? '1');
  const bad = (name: string, value: string | undefined): LaunchCounts => ({
    ok: false,
    error: {
      code: 'InvalidParameterValue',
      message: `Value (${value ?? ''}) for parameter ${name} is invalid. Expected a positive integer.`,
    },
  });
  if (!Number.isInteger(min) || min < 1) return bad('minCount', rawMin);
  if (!Number.isInteger(max) || max < 1) return bad('maxCount', rawMax);
  if (min > max) {
    return {
      ok: false,
      error: {
        code: 'InvalidParameterValue',
        message: `MinCount (${min}) must be less than or equal to MaxCount (${max}).`,
      },
    };
  }
  return { ok: true, min, max };
}
