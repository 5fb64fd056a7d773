import type { ServerResponse } from 'node:http';
import type { Ec2Call, ProxyState } from '../call';
import { sendAnswer, sendEc2Error } from '../call';
import {
  INSTANCE_FILTERS,
  motoStateFilter,
  rewriteDescribeInstances,
  withFilter,
  rewriteDescribeInstanceStatus,
} from '../instances';
import { pendingToRunningMs } from '../latency';
import { encodeQuery, filterLimitRefusal, paramValue, takeFilters } from '../query';
import { endToEndHeaders } from '../upstream';

/** EC2's code for an instance id it does not know (or does not list yet). */
const INSTANCE_NOT_FOUND = 'InvalidInstanceID.NotFound';

/**
 * DescribeInstances and DescribeInstanceStatus (`status`): moto's answer with
 * the proxy's states and placements, its filters applied here.
 */
export async function describeInstances(
  state: ProxyState,
  call: Ec2Call,
  res: ServerResponse,
  status: boolean,
): Promise<void> {
  // EC2 refuses more than 200 filter values in one call; moto would take them
  const tooMany = filterLimitRefusal(call.params);
  if (tooMany !== undefined) {
    sendEc2Error(res, 'FilterLimitExceeded', tooMany);
    return;
  }
  const unlisted = new Set(state.admin.faults.unlisted ?? []);
  // asked for by id while EC2's listing has not caught up: EC2's answer then
  const missing = instanceIdParams(call.params).filter((id) => unlisted.has(id));
  if (missing.length > 0) {
    state.admin.stats.inject(INSTANCE_NOT_FOUND);
    sendEc2Error(res, INSTANCE_NOT_FOUND, instanceNotFoundMessage(missing));
    return;
  }
  const query = takeFilters(call.queryParams, INSTANCE_FILTERS);
  const form = takeFilters(call.formParams, INSTANCE_FILTERS);
  const filters = [...query.taken, ...form.taken];
  // DescribeInstances: moto leaves out the states the proxy would drop (a superset still),
  // the filter added to the part of the request that asked for it. On the first page only:
  // moto finds a NextToken (a reservation id) in its filtered list, and a reservation whose
  // instances were all terminated since the last page is no longer there (moto answers 500).
  // A later page asked unfiltered from that reservation is a superset still: the same order.
  const firstPage = (paramValue(call.params, 'NextToken') ?? '') === '';
  const withState = (part: typeof query): Array<[string, string]> => {
    const toMoto = status || !firstPage ? undefined : motoStateFilter(part.taken);
    return toMoto ? withFilter(part.rest, toMoto) : part.rest;
  };
  const path =
    call.pathname + (query.taken.length > 0 ? `?${encodeQuery(withState(query))}` : call.search);
  const body = form.taken.length > 0 ? Buffer.from(encodeQuery(withState(form))) : call.body;
  const answer = await state.upstream.fetch(call.method, path, endToEndHeaders(call.headers), body);
  if (answer.status !== 200) {
    sendAnswer(res, answer);
    return;
  }
  const pendingMs = pendingToRunningMs(state.admin.latency);
  const viewOf = (id: string) =>
    unlisted.has(id) ? { pending: false, unlisted: true } : state.instances.view(id, pendingMs);
  const rewritten = status
    ? rewriteDescribeInstanceStatus(
        answer.body,
        viewOf,
        filters,
        paramValue(call.params, 'IncludeAllInstances') === 'true',
      )
    : rewriteDescribeInstances(answer.body, viewOf, filters);
  sendAnswer(res, { ...answer, body: rewritten });
}

/** EC2's wording: `The instance ID 'i-1' does not exist`, `The instance IDs 'i-1, i-2' do not exist`. */
function instanceNotFoundMessage(ids: readonly string[]): string {
  return ids.length === 1
    ? `The instance ID '${ids[0]!}' does not exist`
    : `The instance IDs '${ids.join(', ')}' do not exist`;
}

/** The `InstanceId.N` parameters of a call, in order. */
function instanceIdParams(params: Ec2Call['params']): string[] {
  const ids: string[] = [];
  for (let n = 1; ; n++) {
    const id = paramValue(params, `InstanceId.${n}`);
    if (id === undefined) return ids;
    ids.push(id);
  }
}
