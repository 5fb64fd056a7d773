/**
 * Removal in the background (issue 23): remove-application and destroy-model
 * of more than a few units answer `202` once the removal workflow has
 * started; the workflow writes the removal in batches and tells the Dead
 * machines' workflows. Shared by the API (which starts it) and the worker.
 */

/** What one removal workflow removes: an application, or (no `application`) the whole model. */
export interface RemovalTarget {
  model: string;
  /** The model's uid: a model re-created under the same name gets removals of its own. */
  modelUid: string;
  application?: string;
  /**
   * The application's createdAt when the removal started: an application
   * re-deployed under the same name is not this removal's to remove.
   * Absent in removals started before it was recorded (then not checked).
   */
  applicationCreatedAt?: string;
}

/** What a removal did, as its workflow answers it. */
export interface RemovalReport {
  units: number;
  /** Machines it made Dead (each told to its workflow). */
  dead: number;
  /** The model was removed at once (nothing left to tear down). */
  modelRemoved?: boolean;
}

export const REMOVAL_WORKFLOW_TYPE = 'removalWorkflow';

/**
 * One removal per model or application at a time: a retried request finds
 * it running and leaves it be.
 */
export function removalWorkflowId(target: RemovalTarget): string {
  const base = `remove:${target.model}:${target.modelUid}`;
  if (target.application === undefined) return base;
  const app = `${base}:${target.application}`;
  return target.applicationCreatedAt === undefined ? app : `${app}:${target.applicationCreatedAt}`;
}

/** The line the Temporal UI's workflow list shows. */
export function removalSummary(target: RemovalTarget): string {
  return target.application === undefined
    ? `Removing model ${target.model}`
    : `Removing application ${target.application} of model ${target.model}`;
}
