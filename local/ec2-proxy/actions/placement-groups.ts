import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Ec2Call, ProxyState } from '../call';
import { DRY_RUN_OK, sendRefusal, sendXml } from '../call';
import { newRequestId } from '../errors';
import {
  createPlacementGroupXml,
  deletePlacementGroupXml,
  describePlacementGroups as findPlacementGroups,
  describePlacementGroupsXml,
  groupInUse,
  groupKey,
  parseCreatePlacementGroup,
  unknownGroup,
} from '../placement';
import { paramValue } from '../query';
import { parseDescribeInstancesResponse } from '../run';

/**
 * CreatePlacementGroup, DescribePlacementGroups, DeletePlacementGroup: served
 * by the proxy (moto has none), groups kept per account and Region
 * (placement.ts); a group with live members cannot be deleted.
 */

export function createPlacementGroup(state: ProxyState, call: Ec2Call, res: ServerResponse): void {
  const account = accountOf(call.headers);
  const parsed = parseCreatePlacementGroup(call.params, call.scope.region, account);
  if (!parsed.ok) return sendRefusal(res, parsed.error);
  if (paramValue(call.params, 'DryRun') === 'true') return sendRefusal(res, DRY_RUN_OK);
  const added = state.placementGroups.add(call.scope, parsed.value);
  if (!added.ok) return sendRefusal(res, added.error);
  sendXml(res, 200, createPlacementGroupXml(added.value, newRequestId()));
}

export function describePlacementGroups(
  state: ProxyState,
  call: Ec2Call,
  res: ServerResponse,
): void {
  const found = findPlacementGroups(state.placementGroups.list(call.scope), call.params);
  if (!found.ok) return sendRefusal(res, found.error);
  sendXml(res, 200, describePlacementGroupsXml(found.value, newRequestId()));
}

export async function deletePlacementGroup(
  state: ProxyState,
  call: Ec2Call,
  res: ServerResponse,
): Promise<void> {
  const name = paramValue(call.params, 'GroupName');
  if (!name) {
    return sendRefusal(res, {
      code: 'MissingParameter',
      message: 'The request must contain the parameter groupName',
    });
  }
  if (!state.placementGroups.get(call.scope, name)) return sendRefusal(res, unknownGroup(name));
  const key = groupKey(call.scope, name);
  const members = state.instances.inGroup(key);
  if (members.length > 0 && (await anyAlive(state, call, members))) {
    return sendRefusal(res, groupInUse(name));
  }
  if (paramValue(call.params, 'DryRun') === 'true') return sendRefusal(res, DRY_RUN_OK);
  state.placementGroups.delete(call.scope, name);
  state.instances.forgetGroup(key);
  sendXml(res, 200, deletePlacementGroupXml(newRequestId()));
}

/** Whether moto still has any of these instances in a state other than terminated. */
async function anyAlive(
  state: ProxyState,
  call: Ec2Call,
  instanceIds: readonly string[],
): Promise<boolean> {
  const described = await state.moto.ask(call, [
    ['Action', 'DescribeInstances'],
    ['Filter.1.Name', 'instance-id'],
    ...instanceIds.map((id, i): [string, string] => [`Filter.1.Value.${i + 1}`, id]),
  ]);
  if (described.status !== 200) return true;
  return parseDescribeInstancesResponse(described.body).some((r) =>
    [...r.instanceStates.values()].some((s) => s !== 'terminated'),
  );
}

function accountOf(headers: IncomingHttpHeaders): string {
  const account = headers['x-moto-account-id'];
  return typeof account === 'string' && /^\d{12}$/.test(account) ? account : '123456789012';
}
