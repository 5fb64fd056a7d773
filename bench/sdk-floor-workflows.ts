import {
  condition,
  defineSignal,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { SEARCH_ATTRIBUTES } from '../temporal/search-attributes';

/**
 * The two machine-shaped workflows `bench/sdk-floor.ts` measures: what the
 * Temporal SDK costs a worker for a machine's launch when the workflow does
 * nothing of its own. Each publishes a status (one search-attribute update,
 * as a machine does) and then waits for a signal that never comes, so it
 * stays open and cached as a running machine's workflow does.
 */

export interface FloorActivities {
  /** The launch: answers after `waitMs`, as a launch answers when its batch went out. */
  launch(input: FloorInput): Promise<{ instanceId: string }>;
  /** The first step (a machine's plan and zone claim): answers at once. */
  prepare(input: FloorInput): Promise<{ zone: string }>;
}

export interface FloorInput {
  id: string;
  /** The status the run publishes when launched (the bench counts runs by it). */
  label: string;
  waitMs: number;
  /** Padding the size of a machine's start input (its `created` hint). */
  padding: string;
}

const { launch } = proxyActivities<FloorActivities>({ startToCloseTimeout: '5 minutes' });
const { prepare } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '1 minute' });
const local = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '5 minutes' });

const wake = defineSignal('wake');

async function publishAndWait(input: FloorInput, zone: string): Promise<void> {
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.status, value: input.label },
    { key: SEARCH_ATTRIBUTES.zone, value: zone },
  ]);
  let woken = false;
  setHandler(wake, () => {
    woken = true;
  });
  await condition(() => woken);
}

/** Start, one activity, one search-attribute update: 2 workflow tasks, 2 activations. */
export async function floorBare(input: FloorInput): Promise<void> {
  await launch(input);
  await publishAndWait(input, 'a');
}

/**
 * A machine's shape: start, a local activity in the first workflow task, then
 * the activity and the update: 2 workflow tasks, 3 activations.
 */
export async function floorShaped(input: FloorInput): Promise<void> {
  const { zone } = await prepare(input);
  await launch(input);
  await publishAndWait(input, zone);
}

/**
 * A machine whose launch is a local activity too: start, both steps in the
 * first workflow task, then the update: 1 workflow task, no activity task.
 */
export async function floorLocal(input: FloorInput): Promise<void> {
  const { zone } = await prepare(input);
  await local.launch(input);
  await publishAndWait(input, zone);
}

/**
 * Both steps in one local activity (plan, claim and launch in one call):
 * 1 workflow task, 2 activations, no activity task.
 */
export async function floorOneLocal(input: FloorInput): Promise<void> {
  await local.launch(input);
  await publishAndWait(input, 'a');
}
