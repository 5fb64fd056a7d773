import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { AdminState } from './admin';
import { ec2ErrorStatus, ec2ErrorXml, newRequestId } from './errors';
import type { IdempotencyScope, IdempotencyStore } from './idempotency';
import type { InstanceBook } from './instances';
import type { MotoLookups } from './moto';
import type { Ec2Refusal, PlacementGroups } from './placement';
import type { QueryParams } from './query';
import type { Upstream, UpstreamAnswer } from './upstream';
import { endToEndHeaders } from './upstream';

/**
 * What every action handler of the proxy works with: the parsed call, the
 * proxy's state, and the ways to answer (EC2's XML, moto's answer, a forward).
 */

/** A parsed EC2 call: the request as received plus what the proxy reads from it. */
export interface Ec2Call {
  readonly method: string;
  readonly pathname: string;
  readonly search: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly queryParams: QueryParams;
  readonly formParams: QueryParams;
  readonly params: QueryParams;
  readonly action: string;
  readonly scope: IdempotencyScope;
}

/** The proxy's state, shared by the pipeline and the action handlers. */
export interface ProxyState {
  readonly admin: AdminState;
  readonly upstream: Upstream;
  readonly moto: MotoLookups;
  readonly instances: InstanceBook;
  readonly idempotency: IdempotencyStore;
  readonly placementGroups: PlacementGroups;
  /** Instances launched through the proxy and the Region they are in (SSM's managed instances). */
  readonly launchedIn: Map<string, string>;
}

/** EC2's answer to a DryRun that would have succeeded. */
export const DRY_RUN_OK: Ec2Refusal = {
  code: 'DryRunOperation',
  message: 'Request would have succeeded, but DryRun flag is set.',
};

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function forward(
  upstream: Upstream,
  res: ServerResponse,
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<void> {
  const upstreamRes = await upstream.request(method, path, endToEndHeaders(headers), body);
  res.writeHead(upstreamRes.statusCode ?? 502, endToEndHeaders(upstreamRes.headers));
  await pipeline(upstreamRes, res);
}

/** Forwards the call to moto untouched, streaming moto's answer back. */
export function forwardCall(state: ProxyState, call: Ec2Call, res: ServerResponse): Promise<void> {
  return forward(
    state.upstream,
    res,
    call.method,
    call.pathname + call.search,
    call.headers,
    call.body,
  );
}

export function sendRefusal(res: ServerResponse, refusal: Ec2Refusal): void {
  sendEc2Error(res, refusal.code, refusal.message);
}

export function sendXml(res: ServerResponse, status: number, xml: string): void {
  res.writeHead(status, {
    'content-type': 'text/xml;charset=UTF-8',
    'content-length': Buffer.byteLength(xml),
  });
  res.end(xml);
}

export function sendEc2Error(res: ServerResponse, code: string, message: string): void {
  sendXml(res, ec2ErrorStatus(code), ec2ErrorXml(code, message, newRequestId()));
}

export function sendAnswer(res: ServerResponse, answer: UpstreamAnswer): void {
  const headers: OutgoingHttpHeaders = { ...answer.headers };
  headers['content-length'] = Buffer.byteLength(answer.body);
  res.writeHead(answer.status, headers);
  res.end(answer.body);
}
