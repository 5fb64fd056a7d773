import type { ZoneState } from './faults';
import { filterMatches, type QueryFilter } from './query';
import type { Splice } from './xml';
import { childElement, childElements, childText, escapeXml, parseXml, applySplices } from './xml';

/**
 * DescribeAvailabilityZones with the admin API's zone states: moto answers,
 * then each zone in `zoneStates` gets its `<zoneState>` rewritten, and the
 * state filters (taken out of the request before it went to moto) are applied
 * to the rewritten states, so an impaired zone never passes `state=available`.
 */

/** Filter names that select on a zone's state. EC2 documents `state`; `zone-state` is accepted too. */
export const ZONE_STATE_FILTERS: ReadonlySet<string> = new Set(['state', 'zone-state']);

export function rewriteAvailabilityZones(
  xml: string,
  zoneStates: Readonly<Record<string, ZoneState>>,
  stateFilters: readonly QueryFilter[],
): string {
  const root = parseXml(xml);
  const info = childElement(root, 'availabilityZoneInfo');
  if (!info) return xml;
  const splices: Splice[] = [];
  for (const item of childElements(info, 'item')) {
    const stateElement = childElement(item, 'zoneState');
    const zoneName = childText(xml, item, 'zoneName');
    const reported = zoneName === undefined ? undefined : zoneStates[zoneName];
    const state = reported ?? childText(xml, item, 'zoneState') ?? '';
    if (!stateFilters.every((f) => filterMatches(f, state))) {
      splices.push({ start: item.start, end: item.end, text: '' });
    } else if (reported !== undefined && stateElement) {
      splices.push({
        start: stateElement.start,
        end: stateElement.end,
        text: `<zoneState>${escapeXml(reported)}</zoneState>`,
      });
    }
  }
  return applySplices(xml, splices);
}
