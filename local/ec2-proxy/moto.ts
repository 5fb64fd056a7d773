import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { IdempotencyScope } from './idempotency';
import type { QueryParams } from './query';
import { encodeQuery } from './query';
import type { Upstream, UpstreamAnswer } from './upstream';
import { childElement, childElements, childText, parseXml } from './xml';

/** Whose behalf the proxy asks moto on: the caller's headers (identity) and scope. */
export interface Caller {
  readonly headers: IncomingHttpHeaders;
  readonly scope: IdempotencyScope;
}

/**
 * Questions the proxy asks moto itself (never counted in the stats or limited),
 * with the caller's identity so moto answers for the same account and Region.
 * Subnet zones, default subnets and zone lists are cached: moto never moves a
 * subnet, and its zones are fixed.
 */
export class MotoLookups {
  private readonly subnetZones = new Map<string, string>();
  private readonly defaultSubnets = new Map<string, string>();
  private readonly regionZones = new Map<string, readonly string[]>();

  constructor(private readonly upstream: Upstream) {}

  ask(caller: Caller, params: QueryParams): Promise<UpstreamAnswer> {
    const headers: OutgoingHttpHeaders = {
      'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
    };
    if (caller.headers.authorization) headers.authorization = caller.headers.authorization;
    const account = caller.headers['x-moto-account-id'];
    if (account) headers['x-moto-account-id'] = account;
    const body = Buffer.from(encodeQuery([['Version', '2016-11-15'], ...params]));
    return this.upstream.fetch('POST', '/', headers, body);
  }

  /** The zone of a subnet; undefined when moto does not know it. */
  async subnetZone(caller: Caller, subnetId: string): Promise<string | undefined> {
    const cacheKey = JSON.stringify([caller.scope.principal, caller.scope.region, subnetId]);
    const cached = this.subnetZones.get(cacheKey);
    if (cached) return cached;
    const answer = await this.ask(caller, [
      ['Action', 'DescribeSubnets'],
      ['SubnetId.1', subnetId],
    ]);
    if (answer.status !== 200) return undefined;
    const zone = subnets(answer.body).find((s) => s.subnetId === subnetId)?.zone;
    if (zone) this.subnetZones.set(cacheKey, zone);
    return zone;
  }

  /** The default subnet of a zone (where moto launches when given no subnet). */
  async defaultSubnet(caller: Caller, zone: string): Promise<string | undefined> {
    const cacheKey = JSON.stringify([caller.scope.principal, caller.scope.region, zone]);
    const cached = this.defaultSubnets.get(cacheKey);
    if (cached) return cached;
    const answer = await this.ask(caller, [
      ['Action', 'DescribeSubnets'],
      ['Filter.1.Name', 'availability-zone'],
      ['Filter.1.Value.1', zone],
      ['Filter.2.Name', 'default-for-az'],
      ['Filter.2.Value.1', 'true'],
    ]);
    if (answer.status !== 200) return undefined;
    const subnetId = subnets(answer.body)[0]?.subnetId;
    if (subnetId) this.defaultSubnets.set(cacheKey, subnetId);
    return subnetId;
  }

  /** The caller's Region's zone names, as moto serves them. */
  async zones(caller: Caller): Promise<readonly string[]> {
    const cached = this.regionZones.get(caller.scope.region);
    if (cached) return cached;
    const answer = await this.ask(caller, [['Action', 'DescribeAvailabilityZones']]);
    if (answer.status !== 200) return [];
    const root = parseXml(answer.body);
    const info = childElement(root, 'availabilityZoneInfo');
    const names = info
      ? childElements(info, 'item')
          .map((item) => childText(answer.body, item, 'zoneName'))
          .filter((z): z is string => z !== undefined)
      : [];
    if (names.length > 0) this.regionZones.set(caller.scope.region, names);
    return names;
  }
}

function subnets(xml: string): Array<{ subnetId: string; zone: string }> {
  const root = parseXml(xml);
  const set = childElement(root, 'subnetSet');
  if (!set) return [];
  return childElements(set, 'item').flatMap((item) => {
    const subnetId = childText(xml, item, 'subnetId');
    const zone = childText(xml, item, 'availabilityZone');
    return subnetId && zone ? [{ subnetId, zone }] : [];
  });
}
