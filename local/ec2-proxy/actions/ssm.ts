import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { ProxyState } from '../call';
import { newRequestId } from '../errors';
import { callerScope } from '../idempotency';
import { pendingToRunningMs } from '../latency';
import { parseDescribeInstancesResponse } from '../run';
import type { SsmEmulation } from '../ssm';
import { endToEndHeaders } from '../upstream';

/** Systems Manager's JSON calls, answered by the emulation in ssm.ts. */
export async function answerSsm(
  state: ProxyState,
  ssm: SsmEmulation,
  action: string,
  req: IncomingMessage,
  path: string,
  body: Buffer,
  res: ServerResponse,
): Promise<void> {
  state.admin.stats.call(action);
  const scope = callerScope(req.headers);
  const answer = await ssm.handle(action, scope.region, req.headers, body, {
    forward: (headers, b) =>
      state.upstream.fetch(req.method ?? 'POST', path, endToEndHeaders(headers), b),
    online: (region, ids) => onlineInstances(state, req.headers, region, ids),
    launched: (region) => [...state.launchedIn].filter(([, r]) => r === region).map(([id]) => id),
  });
  const json = answer.body;
  res.writeHead(answer.status, {
    'content-type': 'application/x-amz-json-1.1',
    'content-length': Buffer.byteLength(json),
    'x-amzn-requestid': newRequestId(),
  });
  res.end(json);
}

/**
 * Instances SSM would report online: launched through the proxy in the
 * Region, past their `pendingToRunning` delay, and running in moto.
 */
async function onlineInstances(
  state: ProxyState,
  headers: IncomingHttpHeaders,
  region: string,
  instanceIds: readonly string[],
): Promise<Set<string>> {
  const pendingMs = pendingToRunningMs(state.admin.latency);
  const candidates = instanceIds.filter(
    (id) =>
      state.launchedIn.get(id) === region && state.instances.view(id, pendingMs)?.pending === false,
  );
  if (candidates.length === 0) return new Set();
  // asked as EC2 (moto routes by the signing service), on the caller's account and Region
  const caller = {
    headers: {
      ...headers,
      authorization: `AWS4-HMAC-SHA256 Credential=local/20260101/${region}/ec2/aws4_request, SignedHeaders=host, Signature=0`,
    },
    scope: callerScope(headers),
  };
  const described = await state.moto.ask(caller, [
    ['Action', 'DescribeInstances'],
    ['Filter.1.Name', 'instance-id'],
    ...candidates.map((id, i): [string, string] => [`Filter.1.Value.${i + 1}`, id]),
  ]);
  if (described.status !== 200) return new Set();
  const online = new Set<string>();
  for (const r of parseDescribeInstancesResponse(described.body)) {
    for (const [id, s] of r.instanceStates) if (s === 'running') online.add(id);
  }
  return online;
}
