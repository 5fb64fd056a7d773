/**
 * The EC2 endpoint of the local stack: an HTTP proxy in front of moto that
 * forwards every EC2 Query-protocol request untouched (method, path, headers
 * minus hop-by-hop ones, body; moto's answer streamed back) and adds what moto
 * lacks and AWS has (DESIGN.md "Local stack", API.md section 2). The admin API
 * is described in ec2-proxy/admin.ts.
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
 * - Idempotency (ec2-proxy/idempotency.ts): a retry of a launch that succeeded
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
 *   (ec2-proxy/instances.ts);
 * - `unavailable`: every EC2 call answers 503 `Unavailable`; `errors`: every
 *   call of an action answers the EC2 error code set for it (HTTP 400 unless
 *   a server-side code);
 *   `loseResponses`: the call is carried out in full (launches recorded for
 *   their token) and the client's connection destroyed without an answer;
 * - the `launchedInstances` resource bucket: RunInstances takes
 *   MinCount..MaxCount tokens, and is forwarded with MinCount = MaxCount = the
 *   number granted (moto launches MinCount instances);
 * - placement groups, served by the proxy (ec2-proxy/placement.ts), kept per
 *   instance and written into RunInstances / DescribeInstances answers.
 *
 * Limits are checked first, for every action, per Region (as EC2 throttles per
 * account and Region); stats count every EC2 call
 * received (throttled, faulted and replayed ones included); requests without
 * an `Action` (moto's own `/moto-api/`) are forwarded and not counted.
 */

/*
 * Layout of ec2-proxy/: server.ts listens; pipeline.ts is the path every call
 * takes (admin, SSM, stats, latency, unavailable, limits, injected errors, lost
 * responses) and the table of actions the proxy answers or rewrites; one file
 * per action family under actions/ (run-instances, describe-instances,
 * availability-zones, placement-groups, ssm); the other files are the pure
 * pieces those use (query parsing, XML rewriting, faults, limits, idempotency).
 */

export type { Ec2Proxy, Ec2ProxyOptions } from './ec2-proxy/server';
export { Ec2ProxyListenError, startEc2Proxy } from './ec2-proxy/server';
export type { Launch } from './ec2-proxy/pipeline';
