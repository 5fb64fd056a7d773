import http from 'node:http';
import type {
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeaders,
  ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import * as ec2Sdk from '@aws-sdk/client-ec2';
import type { AdminState } from './ec2-proxy-admin';
import { handleAdmin, isAdminPath } from './ec2-proxy-admin';
import {
  ec2ErrorCode,
  ec2ErrorStatus,
  ec2ErrorXml,
  faultMessage,
  IDEMPOTENT_INSTANCE_TERMINATED,
  IDEMPOTENT_PARAMETER_MISMATCH,
  newRequestId,
  REQUEST_LIMIT_EXCEEDED,
} from './ec2-proxy-errors';
import { alternativeZones, NO_FAULTS } from './ec2-proxy-faults';
import type { IdempotencyScope, LaunchRecord } from './ec2-proxy-idempotency';
import {
  callerScope,
  decideReplay,
  IdempotencyStore,
  idempotencyKey,
  launchFingerprint,
} from './ec2-proxy-idempotency';
import type { Clock } from './ec2-proxy-limits';
import { RequestLimiter, systemClock } from './ec2-proxy-limits';
import type { QueryParams } from './ec2-proxy-query';
import { encodeQuery, parseQuery, queryAction, takeFilters } from './ec2-proxy-query';
import type { LaunchTarget, RunInstancesRequest } from './ec2-proxy-run';
import {
  parseDescribeInstancesResponse,
  parseRunInstances,
  parseRunInstancesResponse,
  resolveLaunchTarget,
  responseNamespace,
  runInstancesResponseXml,
} from './ec2-proxy-run';
import { MotoLookups } from './ec2-proxy-moto';
import { ProxyStats } from './ec2-proxy-stats';
import type { UpstreamAnswer } from './ec2-proxy-upstream';
import {
  endToEndHeaders,
  readBody,
  Upstream,
  UpstreamUnreachableError,
} from './ec2-proxy-upstream';
import { rewriteAvailabilityZones, ZONE_STATE_FILTERS } from './ec2-proxy-zones';

/**
 * The EC2 endpoint of the local stack: an HTTP proxy in front of moto that
 * forwards every EC2 Query-protocol request untouched (method, path, headers
 * minus hop-by-hop ones, body; moto's answer streamed back) and adds what moto
 * lacks and AWS has (DESIGN.md "Local stack", API.md section 2). The admin API
 * is described in ec2-proxy-admin.ts.
 *
 * RunInstances
 * - Target zone: `Placement.AvailabilityZone`; else the zone of `SubnetId` (or
 *   of the first `NetworkInterface.N.SubnetId`), asked of moto with
 *   DescribeSubnets and cached; else `<region>a`, which is where moto puts an
 *   instance given neither (into that zone's default subnet). An unknown subnet
 *   is left to moto to refuse. (Given both a zone and a subnet, the zone
 *   decides here; moto itself places by the subnet.)
 * - Faults: a faulted target zone answers the zone's EC2 error code, with EC2's
 *   wording and status (500 for capacity codes, 400 otherwise); nothing reaches
 *   moto. DryRun requests are forwarded as they are.
 * - Idempotency (ec2-proxy-idempotency.ts): a retry of a launch that succeeded
 *   is answered from moto's DescribeInstances of the original instances,
 *   rebuilt into a RunInstances answer (so it shows their current state, as
 *   EC2 does); moto's original answer if they cannot be described; the token is
 *   dropped and the launch made again if moto no longer knows them (moto was
 *   reset). A token whose instance was terminated answers
 *   IdempotentInstanceTerminated (EC2's behaviour since January 2025).
 *   The AWS SDK v3 fills in a ClientToken for every RunInstances call on its
 *   own, so SDK callers are always deduplicated, their own retries included.
 *
 * DescribeAvailabilityZones: moto's answer with `zoneStates` written into
 * `<zoneState>`; the `state` / `zone-state` filters are taken out of the
 * request and applied by the proxy to the rewritten states.
 *
 * Limits are checked first, for every action, per Region (as EC2 throttles per
 * account and Region); stats count every EC2 call
 * received (throttled, faulted and replayed ones included); requests without
 * an `Action` (moto's own `/moto-api/`) are forwarded and not counted.
 */

export interface Ec2ProxyOptions {
  /** moto's base URL, e.g. `http://127.0.0.1:5001`. */
  readonly upstream: string;
  /** Interface to listen on; default 127.0.0.1. */
  readonly host?: string;
  /** Port to listen on; 0 picks a free one. */
  readonly port: number;
  /** Time source for the limits' token buckets (tests). */
  readonly clock?: Clock;
}

export interface Ec2Proxy {
  /** `http://host:port`, the endpoint EC2 clients use. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** The proxy could not listen (port taken, bad host…); `code` is Node's (`EADDRINUSE`…). */
export class Ec2ProxyListenError extends Error {
  override readonly name = 'Ec2ProxyListenError';
  constructor(
    readonly host: string,
    readonly port: number,
    readonly code: string | undefined,
    cause: Error,
  ) {
    super(
      code === 'EADDRINUSE'
        ? `EC2 proxy: port ${port} on ${host} is already in use`
        : `EC2 proxy: cannot listen on ${host}:${port}: ${cause.message}`,
      { cause },
    );
  }
}

export async function startEc2Proxy(opts: Ec2ProxyOptions): Promise<Ec2Proxy> {
  const host = opts.host ?? '127.0.0.1';
  const proxy = new ProxyHandler(new Upstream(opts.upstream), opts.clock ?? systemClock);
  const server = http.createServer((req, res) => {
    proxy.handle(req, res).catch((err: unknown) => proxy.fail(res, err));
  });
  await listen(server, host, opts.port);
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      proxy.close();
    },
  };
}

function listen(server: http.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void =>
      reject(new Ec2ProxyListenError(host, port, err.code, err));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/** A parsed EC2 call: the request as received plus what the proxy reads from it. */
interface Ec2Call {
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

/** The request target as sent, split at `?` (kept verbatim for forwarding). */
interface RequestTarget {
  readonly pathname: string;
  readonly search: string;
}

function splitTarget(raw: string): RequestTarget {
  const q = raw.indexOf('?');
  return q === -1
    ? { pathname: raw, search: '' }
    : { pathname: raw.slice(0, q), search: raw.slice(q) };
}

function isFormBody(headers: IncomingHttpHeaders, body: Buffer): boolean {
  const type = headers['content-type'];
  return type === undefined ? body.length > 0 : type.includes('application/x-www-form-urlencoded');
}

type ReplayOutcome =
  | { readonly kind: 'answer'; readonly status: number; readonly xml: string }
  | { readonly kind: 'gone' };

class ProxyHandler {
  private readonly admin: AdminState;
  private readonly idempotency = new IdempotencyStore();
  private readonly moto: MotoLookups;

  constructor(
    private readonly upstream: Upstream,
    clock: Clock,
  ) {
    this.moto = new MotoLookups(upstream);
    this.admin = {
      faults: NO_FAULTS,
      limiter: new RequestLimiter(clock),
      stats: new ProxyStats(),
      isKnownAction: (action) => Object.hasOwn(ec2Sdk, `${action}Command`),
    };
  }

  close(): void {
    this.upstream.close();
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = splitTarget(req.url ?? '/');
    const method = req.method ?? 'GET';
    const body = await readBody(req);
    if (isAdminPath(target.pathname)) {
      this.answerAdmin(res, method, target.pathname, body);
      return;
    }
    const call = this.parseCall(req, method, target, body);
    if (!call) {
      await this.forward(res, method, target.pathname + target.search, req.headers, body);
      return;
    }
    this.admin.stats.call(call.action);
    if (!this.admin.limiter.allow(call.action, call.scope.region)) {
      this.admin.stats.throttle();
      sendEc2Error(res, REQUEST_LIMIT_EXCEEDED.code, REQUEST_LIMIT_EXCEEDED.message);
      return;
    }
    switch (call.action) {
      case 'RunInstances':
        return this.runInstances(call, res);
      case 'DescribeAvailabilityZones':
        return this.describeAvailabilityZones(call, res);
      default:
        return this.forwardCall(call, res);
    }
  }

  /** Answers a request that went wrong inside the proxy. */
  fail(res: ServerResponse, err: unknown): void {
    if (res.headersSent) {
      res.destroy(err instanceof Error ? err : undefined);
      return;
    }
    if (err instanceof UpstreamUnreachableError) {
      sendXml(
        res,
        502,
        ec2ErrorXml('ServiceUnavailable', `EC2 proxy: ${err.message}`, newRequestId()),
      );
      return;
    }
    const message = err instanceof Error ? err.message : String(err);
    sendXml(res, 500, ec2ErrorXml('InternalError', `EC2 proxy: ${message}`, newRequestId()));
  }

  private answerAdmin(res: ServerResponse, method: string, pathname: string, body: Buffer): void {
    const answer = handleAdmin(this.admin, method, pathname, body.toString('utf8'));
    const json = JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(json),
      ...(answer.allow ? { allow: answer.allow } : {}),
    });
    res.end(json);
  }

  private parseCall(
    req: IncomingMessage,
    method: string,
    url: RequestTarget,
    body: Buffer,
  ): Ec2Call | undefined {
    const queryParams = parseQuery(url.search);
    const formParams = isFormBody(req.headers, body) ? parseQuery(body.toString('utf8')) : [];
    const params = [...queryParams, ...formParams];
    const action = queryAction(params);
    if (!action) return undefined;
    return {
      method,
      pathname: url.pathname,
      search: url.search,
      headers: req.headers,
      body,
      queryParams,
      formParams,
      params,
      action,
      scope: callerScope(req.headers),
    };
  }

  // --- forwarding -----------------------------------------------------------

  private async forward(
    res: ServerResponse,
    method: string,
    path: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
  ): Promise<void> {
    const upstreamRes = await this.upstream.request(method, path, endToEndHeaders(headers), body);
    res.writeHead(upstreamRes.statusCode ?? 502, endToEndHeaders(upstreamRes.headers));
    await pipeline(upstreamRes, res);
  }

  private forwardCall(call: Ec2Call, res: ServerResponse): Promise<void> {
    return this.forward(res, call.method, call.pathname + call.search, call.headers, call.body);
  }

  private fetchCall(call: Ec2Call): Promise<UpstreamAnswer> {
    return this.upstream.fetch(
      call.method,
      call.pathname + call.search,
      endToEndHeaders(call.headers),
      call.body,
    );
  }

  // --- DescribeAvailabilityZones --------------------------------------------

  private async describeAvailabilityZones(call: Ec2Call, res: ServerResponse): Promise<void> {
    const { zoneStates } = this.admin.faults;
    const query = takeFilters(call.queryParams, ZONE_STATE_FILTERS);
    const form = takeFilters(call.formParams, ZONE_STATE_FILTERS);
    const stateFilters = [...query.taken, ...form.taken];
    if (stateFilters.length === 0 && Object.keys(zoneStates).length === 0) {
      return this.forwardCall(call, res);
    }
    const path = call.pathname + (query.rest.length > 0 ? `?${encodeQuery(query.rest)}` : '');
    const body = form.taken.length > 0 ? Buffer.from(encodeQuery(form.rest)) : call.body;
    const answer = await this.upstream.fetch(
      call.method,
      path,
      endToEndHeaders(call.headers),
      body,
    );
    if (answer.status !== 200) {
      sendAnswer(res, answer);
      return;
    }
    sendAnswer(res, {
      ...answer,
      body: rewriteAvailabilityZones(answer.body, zoneStates, stateFilters),
    });
  }

  // --- RunInstances ---------------------------------------------------------

  private async runInstances(call: Ec2Call, res: ServerResponse): Promise<void> {
    const run = parseRunInstances(call.params);
    if (run.dryRun) return this.forwardCall(call, res);
    const target = await resolveLaunchTarget(run, call.scope.region, (subnetId) =>
      this.moto.subnetZone(call, subnetId),
    );
    if (!target) return this.forwardCall(call, res);
    if (!run.clientToken) {
      if (await this.answerFault(call, res, run, target)) return;
      return this.forwardCall(call, res);
    }
    const key = idempotencyKey(
      call.scope,
      target.explicit ? target.zone : undefined,
      run.clientToken,
    );
    const fingerprint = launchFingerprint(call.params);
    for (;;) {
      const acquired = await this.idempotency.acquire(key);
      if (acquired.kind === 'owner') {
        let record: LaunchRecord | undefined;
        try {
          record = await this.launchOnce(call, res, run, target, fingerprint);
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
      const replay = await this.replay(call, acquired.record);
      if (replay.kind === 'answer') {
        sendXml(res, replay.status, replay.xml);
        return;
      }
      this.idempotency.forget(key);
    }
  }

  /** Launches (or injects the zone's fault); returns the record to hold the token with, if it succeeded. */
  private async launchOnce(
    call: Ec2Call,
    res: ServerResponse,
    run: RunInstancesRequest,
    target: LaunchTarget,
    fingerprint: string,
  ): Promise<LaunchRecord | undefined> {
    if (await this.answerFault(call, res, run, target)) return undefined;
    const answer = await this.fetchCall(call);
    sendAnswer(res, answer);
    if (answer.status !== 200) return undefined;
    const launched = parseRunInstancesResponse(answer.body);
    return launched && { fingerprint, ...launched, responseBody: answer.body };
  }

  /**
   * The answer to a retry: the reservation as it is now (DescribeInstances by
   * the original instance ids), as EC2 answers; moto's original answer when
   * it cannot be described; `gone` when moto no longer knows the instances.
   */
  private async replay(call: Ec2Call, record: LaunchRecord): Promise<ReplayOutcome> {
    const original: ReplayOutcome = { kind: 'answer', status: 200, xml: record.responseBody };
    if (record.instanceIds.length === 0) return original;
    const described = await this.moto.ask(call, [
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
    return {
      kind: 'answer',
      status: 200,
      xml: runInstancesResponseXml(reservation, namespace, newRequestId()),
    };
  }

  /** Answers with the target zone's fault, if it has one; true when it did. */
  private async answerFault(
    call: Ec2Call,
    res: ServerResponse,
    run: RunInstancesRequest,
    target: LaunchTarget,
  ): Promise<boolean> {
    const faults = this.admin.faults;
    const code = faults.zones[target.zone];
    if (code === undefined) return false;
    const subnetId =
      target.subnetId ??
      (code === 'InsufficientFreeAddressesInSubnet'
        ? await this.moto.defaultSubnet(call, target.zone)
        : undefined);
    const message = faultMessage(code, {
      zone: target.zone,
      instanceType: run.instanceType,
      alternativeZones: alternativeZones(await this.moto.zones(call), target.zone, faults),
      ...(subnetId ? { subnetId } : {}),
    });
    this.admin.stats.inject(code);
    sendEc2Error(res, code, message);
    return true;
  }
}

// --- responses ----------------------------------------------------------------

function sendXml(res: ServerResponse, status: number, xml: string): void {
  res.writeHead(status, {
    'content-type': 'text/xml;charset=UTF-8',
    'content-length': Buffer.byteLength(xml),
  });
  res.end(xml);
}

function sendEc2Error(res: ServerResponse, code: string, message: string): void {
  sendXml(res, ec2ErrorStatus(code), ec2ErrorXml(code, message, newRequestId()));
}

function sendAnswer(res: ServerResponse, answer: UpstreamAnswer): void {
  const headers: OutgoingHttpHeaders = { ...answer.headers };
  headers['content-length'] = Buffer.byteLength(answer.body);
  res.writeHead(answer.status, headers);
  res.end(answer.body);
}
