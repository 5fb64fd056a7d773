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
  actionFaultMessage,
  ec2ErrorCode,
  ec2ErrorStatus,
  ec2ErrorXml,
  faultMessage,
  IDEMPOTENT_INSTANCE_TERMINATED,
  IDEMPOTENT_PARAMETER_MISMATCH,
  newRequestId,
  REQUEST_LIMIT_EXCEEDED,
} from './ec2-proxy-errors';
import { actionError, alternativeZones, NO_FAULTS, takeLostResponse } from './ec2-proxy-faults';
import type { IdempotencyScope, LaunchRecord } from './ec2-proxy-idempotency';
import {
  callerScope,
  decideReplay,
  IdempotencyStore,
  idempotencyKey,
  launchFingerprint,
} from './ec2-proxy-idempotency';
import type { TrackedInstance } from './ec2-proxy-instances';
import {
  assignPartitions,
  INSTANCE_FILTERS,
  InstanceBook,
  rewriteDescribeInstances,
  rewriteDescribeInstanceStatus,
  rewriteRunInstances,
} from './ec2-proxy-instances';
import {
  latencyFor,
  NO_LATENCY,
  pendingToRunningMs,
  runInstancesAnswerMs,
} from './ec2-proxy-latency';
import type { Clock } from './ec2-proxy-limits';
import { RequestLimiter, systemClock } from './ec2-proxy-limits';
import type { QueryParams } from './ec2-proxy-query';
import {
  encodeQuery,
  filterLimitRefusal,
  paramValue,
  parseQuery,
  queryAction,
  takeFilters,
} from './ec2-proxy-query';
import type { Ec2Refusal, ResolvedPlacement } from './ec2-proxy-placement';
import {
  createPlacementGroupXml,
  deletePlacementGroupXml,
  describePlacementGroups,
  describePlacementGroupsXml,
  groupInUse,
  groupKey,
  parseCreatePlacementGroup,
  parsePlacementRequest,
  PLACEMENT_PARAMS,
  PlacementGroups,
  resolvePlacement,
  unknownGroup,
} from './ec2-proxy-placement';
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
import { DiscardedResponse } from './ec2-proxy-lost';
import { SsmEmulation, ssmAction } from './ec2-proxy-ssm';

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
 * Added by the admin API's later settings (API.md section 2):
 * - latency: each call waits its action's delay (or `default`) before it is
 *   handled; `pendingToRunning`: DescribeInstances / DescribeInstanceStatus
 *   report an instance launched through the proxy as `pending` that long
 *   (moto says `running` at once), state filters applied by the proxy
 *   (ec2-proxy-instances.ts);
 * - `unavailable`: every EC2 call answers 503 `Unavailable`; `errors`: every
 *   call of an action answers the EC2 error code set for it (HTTP 400 unless
 *   a server-side code);
 *   `loseResponses`: the call is carried out in full (launches recorded for
 *   their token) and the client's connection destroyed without an answer;
 * - the `launchedInstances` resource bucket: RunInstances takes
 *   MinCount..MaxCount tokens, and is forwarded with MinCount = MaxCount = the
 *   number granted (moto launches MinCount instances);
 * - placement groups, served by the proxy (ec2-proxy-placement.ts), kept per
 *   instance and written into RunInstances / DescribeInstances answers.
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
  private readonly instances: InstanceBook;
  private readonly placementGroups = new PlacementGroups();
  private readonly ssm = new SsmEmulation();
  /** Instances launched through the proxy and the Region they are in (SSM's managed instances). */
  private readonly launchedIn = new Map<string, string>();

  constructor(
    private readonly upstream: Upstream,
    clock: Clock,
  ) {
    this.moto = new MotoLookups(upstream);
    this.instances = new InstanceBook(clock);
    this.admin = {
      faults: NO_FAULTS,
      latency: NO_LATENCY,
      limiter: new RequestLimiter(clock),
      stats: new ProxyStats(),
      isKnownAction: (action) => Object.hasOwn(ec2Sdk, `${action}Command`),
      ssm: this.ssm,
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
    const ssmCall = ssmAction(req.headers);
    if (ssmCall) return this.answerSsm(ssmCall, req, target, body, res);
    const call = this.parseCall(req, method, target, body);
    if (!call) {
      await this.forward(res, method, target.pathname + target.search, req.headers, body);
      return;
    }
    this.admin.stats.call(call.action);
    const delay = latencyFor(this.admin.latency, call.action);
    if (delay > 0) await sleep(delay);
    if (this.admin.faults.unavailable) {
      this.admin.stats.inject(UNAVAILABLE.code);
      sendEc2Error(res, UNAVAILABLE.code, UNAVAILABLE.message);
      return;
    }
    if (!this.admin.limiter.allow(call.action, call.scope.region)) {
      this.admin.stats.throttle();
      sendEc2Error(res, REQUEST_LIMIT_EXCEEDED.code, REQUEST_LIMIT_EXCEEDED.message);
      return;
    }
    const refused = actionError(this.admin.faults, call.action);
    if (refused !== undefined) {
      this.admin.stats.inject(refused);
      const instanceId = paramValue(call.params, 'InstanceId.1');
      sendEc2Error(res, refused, actionFaultMessage(refused, call.action, instanceId));
      return;
    }
    const lost = takeLostResponse(this.admin.faults, call.action);
    if (!lost) return this.dispatch(call, res);
    this.admin.faults = lost;
    this.admin.stats.inject(LOST_RESPONSE);
    const sink = new DiscardedResponse();
    try {
      await this.dispatch(call, sink.asServerResponse());
    } finally {
      res.destroy();
    }
  }

  private dispatch(call: Ec2Call, res: ServerResponse): Promise<void> {
    switch (call.action) {
      case 'RunInstances':
        return this.runInstances(call, res);
      case 'DescribeAvailabilityZones':
        return this.describeAvailabilityZones(call, res);
      case 'DescribeInstances':
        return this.describeInstances(call, res, false);
      case 'DescribeInstanceStatus':
        return this.describeInstances(call, res, true);
      case 'CreatePlacementGroup':
        return Promise.resolve(this.createPlacementGroup(call, res));
      case 'DescribePlacementGroups':
        return Promise.resolve(this.describePlacementGroups(call, res));
      case 'DeletePlacementGroup':
        return this.deletePlacementGroup(call, res);
      default:
        return this.forwardCall(call, res);
    }
  }

  // --- Systems Manager (ec2-proxy-ssm.ts) ------------------------------------

  private async answerSsm(
    action: string,
    req: IncomingMessage,
    target: RequestTarget,
    body: Buffer,
    res: ServerResponse,
  ): Promise<void> {
    this.admin.stats.call(action);
    const scope = callerScope(req.headers);
    const answer = await this.ssm.handle(action, scope.region, req.headers, body, {
      forward: (headers, b) =>
        this.upstream.fetch(
          req.method ?? 'POST',
          target.pathname + target.search,
          endToEndHeaders(headers),
          b,
        ),
      online: (region, ids) => this.onlineInstances(req.headers, region, ids),
      launched: (region) => [...this.launchedIn].filter(([, r]) => r === region).map(([id]) => id),
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
  private async onlineInstances(
    headers: IncomingHttpHeaders,
    region: string,
    instanceIds: readonly string[],
  ): Promise<Set<string>> {
    const pendingMs = pendingToRunningMs(this.admin.latency);
    const candidates = instanceIds.filter(
      (id) =>
        this.launchedIn.get(id) === region && this.instances.view(id, pendingMs)?.pending === false,
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
    const described = await this.moto.ask(caller, [
      ['Action', 'DescribeInstances'],
      ['Filter.1.Name', 'instance-id'],
      ...candidates.map((id, i): [string, string] => [`Filter.1.Value.${i + 1}`, id]),
    ]);
    if (described.status !== 200) return new Set();
    const online = new Set<string>();
    for (const r of parseDescribeInstancesResponse(described.body)) {
      for (const [id, state] of r.instanceStates) if (state === 'running') online.add(id);
    }
    return online;
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

  // --- DescribeInstances / DescribeInstanceStatus -------------------------------

  /** moto's answer with the proxy's states and placements, its filters applied here. */
  private async describeInstances(
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
    const unlisted = new Set(this.admin.faults.unlisted ?? []);
    // asked for by id while EC2's listing has not caught up: EC2's answer then
    const missing = instanceIdParams(call.params).filter((id) => unlisted.has(id));
    if (missing.length > 0) {
      this.admin.stats.inject(INSTANCE_NOT_FOUND);
      sendEc2Error(res, INSTANCE_NOT_FOUND, instanceNotFoundMessage(missing));
      return;
    }
    const query = takeFilters(call.queryParams, INSTANCE_FILTERS);
    const form = takeFilters(call.formParams, INSTANCE_FILTERS);
    const filters = [...query.taken, ...form.taken];
    const path =
      call.pathname + (query.taken.length > 0 ? `?${encodeQuery(query.rest)}` : call.search);
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
    const pendingMs = pendingToRunningMs(this.admin.latency);
    const viewOf = (id: string) =>
      unlisted.has(id) ? { pending: false, unlisted: true } : this.instances.view(id, pendingMs);
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

  // --- placement groups -----------------------------------------------------

  private createPlacementGroup(call: Ec2Call, res: ServerResponse): void {
    const account = accountOf(call.headers);
    const parsed = parseCreatePlacementGroup(call.params, call.scope.region, account);
    if (!parsed.ok) return sendRefusal(res, parsed.error);
    if (paramValue(call.params, 'DryRun') === 'true') return sendRefusal(res, DRY_RUN_OK);
    const added = this.placementGroups.add(call.scope, parsed.value);
    if (!added.ok) return sendRefusal(res, added.error);
    sendXml(res, 200, createPlacementGroupXml(added.value, newRequestId()));
  }

  private describePlacementGroups(call: Ec2Call, res: ServerResponse): void {
    const found = describePlacementGroups(this.placementGroups.list(call.scope), call.params);
    if (!found.ok) return sendRefusal(res, found.error);
    sendXml(res, 200, describePlacementGroupsXml(found.value, newRequestId()));
  }

  private async deletePlacementGroup(call: Ec2Call, res: ServerResponse): Promise<void> {
    const name = paramValue(call.params, 'GroupName');
    if (!name) {
      return sendRefusal(res, {
        code: 'MissingParameter',
        message: 'The request must contain the parameter groupName',
      });
    }
    if (!this.placementGroups.get(call.scope, name)) return sendRefusal(res, unknownGroup(name));
    const key = groupKey(call.scope, name);
    const members = this.instances.inGroup(key);
    if (members.length > 0 && (await this.anyAlive(call, members))) {
      return sendRefusal(res, groupInUse(name));
    }
    if (paramValue(call.params, 'DryRun') === 'true') return sendRefusal(res, DRY_RUN_OK);
    this.placementGroups.delete(call.scope, name);
    this.instances.forgetGroup(key);
    sendXml(res, 200, deletePlacementGroupXml(newRequestId()));
  }

  /** Whether moto still has any of these instances in a state other than terminated. */
  private async anyAlive(call: Ec2Call, instanceIds: readonly string[]): Promise<boolean> {
    const described = await this.moto.ask(call, [
      ['Action', 'DescribeInstances'],
      ['Filter.1.Name', 'instance-id'],
      ...instanceIds.map((id, i): [string, string] => [`Filter.1.Value.${i + 1}`, id]),
    ]);
    if (described.status !== 200) return true;
    return parseDescribeInstancesResponse(described.body).some((r) =>
      [...r.instanceStates.values()].some((state) => state !== 'terminated'),
    );
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
      await this.launchOnce(call, res, run, target, '');
      return;
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
    const placement = resolvePlacement(parsePlacementRequest(call.params), (name) =>
      this.placementGroups.get(call.scope, name),
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
    const granted = this.admin.limiter.launchable(region, counts.min, counts.max);
    if (granted === 0) {
      this.admin.stats.throttle();
      sendEc2Error(res, REQUEST_LIMIT_EXCEEDED.code, REQUEST_LIMIT_EXCEEDED.message);
      return undefined;
    }
    const answer = await this.fetchWith(call, PLACEMENT_PARAMS, {
      MinCount: String(granted),
      MaxCount: String(granted),
    }).catch((err: unknown) => {
      this.admin.limiter.unlaunched(region, granted);
      throw err;
    });
    if (answer.status !== 200) {
      this.admin.limiter.unlaunched(region, granted);
      sendAnswer(res, answer);
      return undefined;
    }
    const launched = parseRunInstancesResponse(answer.body);
    if (!launched) {
      sendAnswer(res, answer);
      return undefined;
    }
    this.admin.limiter.unlaunched(region, granted - launched.instanceIds.length);
    this.recordLaunch(call, launched.instanceIds, placement.value);
    const pendingMs = pendingToRunningMs(this.admin.latency);
    const body = rewriteRunInstances(answer.body, (id) => this.instances.view(id, pendingMs));
    const hold = runInstancesAnswerMs(this.admin.latency);
    if (hold > 0) await sleep(hold);
    sendAnswer(res, { ...answer, body });
    return { fingerprint, ...launched, responseBody: body };
  }

  /** Remembers launched instances: their launch time and placement group / partition. */
  private recordLaunch(
    call: Ec2Call,
    instanceIds: readonly string[],
    placement: ResolvedPlacement | undefined,
  ): void {
    instanceIds.forEach((id) => this.launchedIn.set(id, call.scope.region));
    if (!placement) {
      instanceIds.forEach((id) => this.instances.record(id, {}));
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
              this.instances.partitionLoad(key, group.partitionCount),
              instanceIds.length,
            );
    instanceIds.forEach((id, i) => {
      const partitionNumber = partitions[i];
      const tracked: Omit<TrackedInstance, 'launchedAt'> = {
        groupName: group.groupName,
        groupKey: key,
        ...(partitionNumber === undefined ? {} : { partitionNumber }),
      };
      this.instances.record(id, tracked);
    });
  }

  /** Sends the call to moto with `drop` parameters taken out and `set` ones replaced (or added). */
  private fetchWith(
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
    return this.upstream.fetch(call.method, path, headers, body);
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
    const pendingMs = pendingToRunningMs(this.admin.latency);
    const viewOf = (id: string) => this.instances.view(id, pendingMs);
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

const UNAVAILABLE = {
  code: 'Unavailable',
  message: 'The server is overloaded or is not accepting requests at this time.',
} as const;

/** What the stats count a lost response under (`injected`). */
const LOST_RESPONSE = 'LostResponse';

/** EC2's answer to a DryRun that would have succeeded. */
const DRY_RUN_OK: Ec2Refusal = {
  code: 'DryRunOperation',
  message: 'Request would have succeeded, but DryRun flag is set.',
};

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function accountOf(headers: IncomingHttpHeaders): string {
  const account = headers['x-moto-account-id'];
  return typeof account === 'string' && /^\d{12}$/.test(account) ? account : '123456789012';
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

function sendRefusal(res: ServerResponse, refusal: Ec2Refusal): void {
  sendEc2Error(res, refusal.code, refusal.message);
}

function sendXml(res: ServerResponse, status: number, xml: string): void {
  res.writeHead(status, {
    'content-type': 'text/xml;charset=UTF-8',
    'content-length': Buffer.byteLength(xml),
  });
  res.end(xml);
}

/** EC2's code for an instance id it does not know (or does not list yet). */
const INSTANCE_NOT_FOUND = 'InvalidInstanceID.NotFound';

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

function sendEc2Error(res: ServerResponse, code: string, message: string): void {
  sendXml(res, ec2ErrorStatus(code), ec2ErrorXml(code, message, newRequestId()));
}

function sendAnswer(res: ServerResponse, answer: UpstreamAnswer): void {
  const headers: OutgoingHttpHeaders = { ...answer.headers };
  headers['content-length'] = Buffer.byteLength(answer.body);
  res.writeHead(answer.status, headers);
  res.end(answer.body);
}
