import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import * as ec2Sdk from '@aws-sdk/client-ec2';
import { answerSsm } from './actions/ssm';
import { describeAvailabilityZones } from './actions/availability-zones';
import { describeInstances } from './actions/describe-instances';
import {
  createPlacementGroup,
  deletePlacementGroup,
  describePlacementGroups,
} from './actions/placement-groups';
import { runInstances } from './actions/run-instances';
import { handleAdmin, isAdminPath } from './admin';
import type { Ec2Call, ProxyState } from './call';
import { forward, forwardCall, sendEc2Error, sendXml, sleep } from './call';
import { actionFaultMessage, ec2ErrorXml, newRequestId, REQUEST_LIMIT_EXCEEDED } from './errors';
import { actionError, NO_FAULTS, takeLostResponse } from './faults';
import { callerScope, IdempotencyStore } from './idempotency';
import { InstanceBook } from './instances';
import { latencyFor, NO_LATENCY, pendingToRunningMs } from './latency';
import type { Clock } from './limits';
import { RequestLimiter } from './limits';
import { DiscardedResponse } from './lost';
import { MotoLookups } from './moto';
import { PlacementGroups } from './placement';
import { paramValue, parseQuery, queryAction } from './query';
import { SsmEmulation, ssmAction } from './ssm';
import { ProxyStats } from './stats';
import { CALLER_HEADER } from '../../ec2/caller';
import type { Upstream } from './upstream';
import { readBody, UpstreamUnreachableError } from './upstream';

/**
 * The request pipeline, the same for every EC2 action: admin paths and SSM
 * apart, then count the call, wait its latency, answer `unavailable`, the
 * request limits, an action's injected error, and lose the response when
 * asked to; then hand the call to its action (ACTIONS), or forward it to moto.
 */

type ActionHandler = (state: ProxyState, call: Ec2Call, res: ServerResponse) => Promise<void>;

/** The actions the proxy answers itself or rewrites; every other one goes to moto untouched. */
const ACTIONS: Readonly<Record<string, ActionHandler>> = {
  RunInstances: runInstances,
  DescribeAvailabilityZones: describeAvailabilityZones,
  DescribeInstances: (state, call, res) => describeInstances(state, call, res, false),
  DescribeInstanceStatus: (state, call, res) => describeInstances(state, call, res, true),
  CreatePlacementGroup: (state, call, res) =>
    Promise.resolve(createPlacementGroup(state, call, res)),
  DescribePlacementGroups: (state, call, res) =>
    Promise.resolve(describePlacementGroups(state, call, res)),
  DeletePlacementGroup: deletePlacementGroup,
};

const UNAVAILABLE = {
  code: 'Unavailable',
  message: 'The server is overloaded or is not accepting requests at this time.',
} as const;

/** The caller a request names (ec2/caller.ts), if it names one. */
function callerOf(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  return value === undefined || value === '' ? undefined : value;
}

/** What the stats count a lost response under (`injected`). */
const LOST_RESPONSE = 'LostResponse';

/** The request target as sent, split at `?` (kept verbatim for forwarding). */
interface RequestTarget {
  readonly pathname: string;
  readonly search: string;
}

/** An instance launched through the proxy (ProxyHandler.launches). */
export interface Launch {
  readonly instanceId: string;
  /** Where it was launched; absent for an instance the proxy recorded otherwise. */
  readonly region: string | undefined;
  /** The proxy's clock time (ms; `Ec2Proxy.now`, not the wall clock) from which it reports `running`. */
  readonly runningAt: number;
}

export class ProxyHandler {
  private readonly state: ProxyState;
  private readonly ssm = new SsmEmulation();

  constructor(upstream: Upstream, clock: Clock) {
    this.state = {
      upstream,
      moto: new MotoLookups(upstream),
      instances: new InstanceBook(clock),
      idempotency: new IdempotencyStore(),
      placementGroups: new PlacementGroups(),
      launchedIn: new Map(),
      admin: {
        faults: NO_FAULTS,
        latency: NO_LATENCY,
        limiter: new RequestLimiter(clock),
        stats: new ProxyStats(),
        isKnownAction: (action) => Object.hasOwn(ec2Sdk, `${action}Command`),
        ssm: this.ssm,
      },
    };
  }

  close(): void {
    this.state.upstream.close();
  }

  /**
   * The instances launched through the proxy: each one's Region and the
   * clock time from which it reports `running` (its launch plus the current
   * `pendingToRunning`), for the local stack's state-change events.
   */
  launches(): Launch[] {
    const pending = pendingToRunningMs(this.state.admin.latency);
    return this.state.instances.launchTimes().map(([instanceId, launchedAt]) => ({
      instanceId,
      region: this.state.launchedIn.get(instanceId),
      runningAt: launchedAt + pending,
    }));
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
    if (ssmCall) {
      const path = target.pathname + target.search;
      return answerSsm(this.state, this.ssm, ssmCall, req, path, body, res);
    }
    const call = parseCall(req, method, target, body);
    if (!call) {
      const path = target.pathname + target.search;
      await forward(this.state.upstream, res, method, path, req.headers, body);
      return;
    }
    const { admin } = this.state;
    admin.stats.call(call.action, callerOf(call.headers[CALLER_HEADER]));
    const delay = latencyFor(admin.latency, call.action);
    if (delay > 0) await sleep(delay);
    if (admin.faults.unavailable) {
      admin.stats.inject(UNAVAILABLE.code);
      sendEc2Error(res, UNAVAILABLE.code, UNAVAILABLE.message);
      return;
    }
    if (!admin.limiter.allow(call.action, call.scope.region)) {
      admin.stats.throttle();
      sendEc2Error(res, REQUEST_LIMIT_EXCEEDED.code, REQUEST_LIMIT_EXCEEDED.message);
      return;
    }
    const refused = actionError(admin.faults, call.action);
    if (refused !== undefined) {
      admin.stats.inject(refused);
      const instanceId = paramValue(call.params, 'InstanceId.1');
      sendEc2Error(res, refused, actionFaultMessage(refused, call.action, instanceId));
      return;
    }
    const lost = takeLostResponse(admin.faults, call.action);
    if (!lost) return this.dispatch(call, res);
    admin.faults = lost;
    admin.stats.inject(LOST_RESPONSE);
    const sink = new DiscardedResponse();
    try {
      await this.dispatch(call, sink.asServerResponse());
    } finally {
      res.destroy();
    }
  }

  private dispatch(call: Ec2Call, res: ServerResponse): Promise<void> {
    const action = Object.hasOwn(ACTIONS, call.action) ? ACTIONS[call.action] : undefined;
    return action ? action(this.state, call, res) : forwardCall(this.state, call, res);
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
    const answer = handleAdmin(this.state.admin, method, pathname, body.toString('utf8'));
    const json = JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(json),
      ...(answer.allow ? { allow: answer.allow } : {}),
    });
    res.end(json);
  }
}

function parseCall(
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
