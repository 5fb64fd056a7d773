import type { QueryParams } from './query';
import { paramValue } from './query';
import {
  childElement,
  childElements,
  childText,
  descendant,
  innerXml,
  parseXml,
  escapeXml,
  XmlParseError,
} from './xml';
import type { XmlElement } from './xml';

/** The parts of a RunInstances request the proxy acts on. */
export interface RunInstancesRequest {
  readonly clientToken?: string;
  /** `Placement.AvailabilityZone`. */
  readonly placementZone?: string;
  /** `SubnetId`, else the first `NetworkInterface.N.SubnetId` (moto places by either). */
  readonly subnetId?: string;
  /** `InstanceType`; EC2 and moto default to m1.small. */
  readonly instanceType: string;
  readonly dryRun: boolean;
}

export function parseRunInstances(params: QueryParams): RunInstancesRequest {
  const nicSubnet = params.find(([k]) => /^NetworkInterface\.\d+\.SubnetId$/.test(k))?.[1];
  const token = paramValue(params, 'ClientToken');
  const zone = paramValue(params, 'Placement.AvailabilityZone');
  const subnet = paramValue(params, 'SubnetId') ?? nicSubnet;
  return {
    ...(token ? { clientToken: token } : {}),
    ...(zone ? { placementZone: zone } : {}),
    ...(subnet ? { subnetId: subnet } : {}),
    instanceType: paramValue(params, 'InstanceType') || 'm1.small',
    dryRun: paramValue(params, 'DryRun') === 'true',
  };
}

/** Where a RunInstances call lands, and whether the caller named the zone (zonal idempotency). */
export interface LaunchTarget {
  readonly zone: string;
  readonly explicit: boolean;
  readonly subnetId?: string;
}

/**
 * The zone a launch targets: `Placement.AvailabilityZone`; else the subnet's
 * zone; else the zone moto picks when given neither, which is the region's
 * first zone (`<region>a`, moto's `Instance.__init__`), whose default subnet
 * the instance then gets. Undefined when the subnet is unknown (moto will
 * answer that error itself).
 */
export async function resolveLaunchTarget(
  request: RunInstancesRequest,
  region: string,
  subnetZone: (subnetId: string) => Promise<string | undefined>,
): Promise<LaunchTarget | undefined> {
  const subnet = request.subnetId ? { subnetId: request.subnetId } : {};
  if (request.placementZone) return { zone: request.placementZone, explicit: true, ...subnet };
  if (request.subnetId) {
    const zone = await subnetZone(request.subnetId);
    return zone === undefined ? undefined : { zone, explicit: true, ...subnet };
  }
  return { zone: `${region}a`, explicit: false };
}

/** The reservation and instance ids of a successful RunInstances answer; undefined if unreadable. */
export function parseRunInstancesResponse(
  xml: string,
): { reservationId: string; instanceIds: string[] } | undefined {
  let root: XmlElement;
  try {
    root = parseXml(xml);
  } catch (err) {
    if (err instanceof XmlParseError) return undefined;
    throw err;
  }
  const reservationId = childText(xml, root, 'reservationId');
  const set = childElement(root, 'instancesSet');
  if (!reservationId || !set) return undefined;
  const instanceIds = childElements(set, 'item')
    .map((item) => childText(xml, item, 'instanceId'))
    .filter((id): id is string => id !== undefined);
  return { reservationId, instanceIds };
}

/** Instances as DescribeInstances shows them, grouped back into their reservation. */
export interface DescribedReservation {
  readonly reservationId: string;
  readonly instanceStates: ReadonlyMap<string, string>;
  /** The reservation's inner XML: reservationId, ownerId, groupSet, instancesSet. */
  readonly innerXml: string;
}

export function parseDescribeInstancesResponse(xml: string): DescribedReservation[] {
  const root = parseXml(xml);
  const set = childElement(root, 'reservationSet');
  if (!set) return [];
  return childElements(set, 'item').flatMap((reservation) => {
    const reservationId = childText(xml, reservation, 'reservationId');
    const instances = childElement(reservation, 'instancesSet');
    if (!reservationId || !instances) return [];
    const instanceStates = new Map<string, string>();
    for (const item of childElements(instances, 'item')) {
      const id = childText(xml, item, 'instanceId');
      const stateName = descendant(item, 'instanceState', 'name');
      if (id)
        instanceStates.set(
          id,
          stateName ? xml.slice(stateName.innerStart, stateName.innerEnd) : '',
        );
    }
    return [{ reservationId, instanceStates, innerXml: innerXml(xml, reservation) }];
  });
}

/** The namespace of an EC2 answer's root element (moto: the 2016-11-15 API). */
export function responseNamespace(xml: string): string {
  const m = /<[A-Za-z]+Response\b[^>]*\bxmlns="([^"]*)"/.exec(xml);
  return m?.[1] ?? 'http://ec2.amazonaws.com/doc/2016-11-15/';
}

/** A RunInstances answer built from a reservation's current state, as EC2 answers a retry. */
export function runInstancesResponseXml(
  reservation: DescribedReservation,
  namespace: string,
  requestId: string,
): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<RunInstancesResponse xmlns="${escapeXml(namespace)}">` +
    `<requestId>${escapeXml(requestId)}</requestId>` +
    reservation.innerXml +
    '</RunInstancesResponse>'
  );
}
