import type { ServerResponse } from 'node:http';
import type { Ec2Call, ProxyState } from '../call';
import { forwardCall, sendAnswer } from '../call';
import { encodeQuery, takeFilters } from '../query';
import { endToEndHeaders } from '../upstream';
import { rewriteAvailabilityZones, ZONE_STATE_FILTERS } from '../zones';

/**
 * DescribeAvailabilityZones: moto's answer with `zoneStates` written into
 * `<zoneState>`; the `state` / `zone-state` filters are taken out of the
 * request and applied by the proxy to the rewritten states.
 */
export async function describeAvailabilityZones(
  state: ProxyState,
  call: Ec2Call,
  res: ServerResponse,
): Promise<void> {
  const { zoneStates } = state.admin.faults;
  const query = takeFilters(call.queryParams, ZONE_STATE_FILTERS);
  const form = takeFilters(call.formParams, ZONE_STATE_FILTERS);
  const stateFilters = [...query.taken, ...form.taken];
  if (stateFilters.length === 0 && Object.keys(zoneStates).length === 0) {
    return forwardCall(state, call, res);
  }
  const path = call.pathname + (query.rest.length > 0 ? `?${encodeQuery(query.rest)}` : '');
  const body = form.taken.length > 0 ? Buffer.from(encodeQuery(form.rest)) : call.body;
  const answer = await state.upstream.fetch(call.method, path, endToEndHeaders(call.headers), body);
  if (answer.status !== 200) {
    sendAnswer(res, answer);
    return;
  }
  sendAnswer(res, {
    ...answer,
    body: rewriteAvailabilityZones(answer.body, zoneStates, stateFilters),
  });
}
