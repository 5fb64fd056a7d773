import { Context, heartbeat, log } from '@temporalio/activity';
import type { ServiceContext } from '../service/context';
import {
  removeApplicationContents,
  removeModelContents,
  type RemovalProgress,
} from '../service/removal-batches';
import { TemporalMachineWorkflows } from '../service/workflows';
import { EntityNotFoundError } from '../state/errors';
import type { RemovalReport, RemovalTarget } from '../temporal/removal';
import type { ActivityDeps } from './deps';

/** The services' logger, in an activity: the activity's own (its lines carry the workflow). */
const activityLog = {
  info(message: string, attrs?: Record<string, unknown>): void {
    log.info(message, attrs);
  },
  warn(message: string, attrs?: Record<string, unknown>): void {
    log.warn(message, attrs);
  },
  error(message: string, attrs?: Record<string, unknown>): void {
    log.error(message, attrs);
  },
};

/** Dead machines' workflows told at once. */
const SIGNAL_LANES = 32;

/**
 * The removal workflow's one activity (workflows/removal.ts): the same
 * batched writes a small removal makes in its request
 * (service/removal-batches.ts), each Dead machine's workflow told as soon as
 * its batch is written. It only ever reads and then writes under the
 * versions read, so a retry (a worker that died, DynamoDB throttling) goes
 * on from what is left; a retry also tells every Dead machine of the model
 * again, since the try before may have died between a write and its signals.
 */
export function removalActivities(deps: ActivityDeps) {
  return {
    async removeContents(target: RemovalTarget): Promise<RemovalReport> {
      const client = deps.temporal;
      if (!client) throw new Error('no Temporal client to tell Dead machines with');
      const workflows = new TemporalMachineWorkflows(() => Promise.resolve(client), deps.taskQueue);
      const ctx: ServiceContext = {
        repo: deps.repo,
        workflows,
        defaultRegion: deps.defaultRegion,
        now: () => new Date(deps.now?.() ?? Date.now()),
        log: activityLog as unknown as ServiceContext['log'],
      };
      const { model } = target;
      const signal = (ids: readonly string[]) => tellDead(workflows, model, ids);
      const progress: RemovalProgress = { dead: signal, tick: () => heartbeat() };
      const retried = Context.current().info.attempt > 1;
      try {
        // a retry after the model was re-created (or the application
        // re-deployed) under the same name: that one is not ours to remove
        if (!(await stillTheTarget(deps, target))) {
          log.info('removal target replaced under its name; nothing to remove', {
            model,
            application: target.application,
          });
          return { units: 0, dead: 0 };
        }
        const counts =
          target.application === undefined
            ? await removeModelContents(ctx, model, progress)
            : await removeApplicationContents(ctx, model, target.application, progress);
        if (retried) {
          const dead = (await deps.repo.listMachines(model)).filter((m) => m.life === 'dead');
          await signal(dead.map((m) => m.id));
        }
        const modelRemoved =
          target.application === undefined &&
          (await deps.repo.getModel(model).then(
            () => false,
            (err: unknown) => {
              if (err instanceof EntityNotFoundError) return true;
              throw err;
            },
          ));
        log.info('removed', { model, application: target.application, ...counts, modelRemoved });
        return { ...counts, ...(target.application === undefined ? { modelRemoved } : {}) };
      } catch (err) {
        // the model (or application) went meanwhile: nothing left to remove
        if (err instanceof EntityNotFoundError) return { units: 0, dead: 0 };
        throw err;
      }
    },
  };
}

/**
 * Whether the model (and application) the removal was started for are the
 * ones now under their names. Throws EntityNotFoundError when gone.
 */
async function stillTheTarget(deps: ActivityDeps, target: RemovalTarget): Promise<boolean> {
  if ((await deps.repo.getModel(target.model)).uid !== target.modelUid) return false;
  if (target.application === undefined || target.applicationCreatedAt === undefined) return true;
  const app = await deps.repo.getApplication(target.model, target.application);
  return app.createdAt === target.applicationCreatedAt;
}

/**
 * Tells Dead machines' workflows (signal-with-start: one that is missing is
 * started and finds its machine Dead). A signal that fails is logged; the
 * model's sweep tells every Dead machine again.
 */
async function tellDead(
  workflows: TemporalMachineWorkflows,
  model: string,
  ids: readonly string[],
): Promise<void> {
  let next = 0;
  let failed = 0;
  const lane = async () => {
    while (next < ids.length) {
      const id = ids[next++]!;
      await workflows.signal(model, id, 'destroy').catch(() => {
        failed += 1;
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(SIGNAL_LANES, ids.length) }, lane));
  if (failed > 0) log.warn('could not tell some Dead machines; the sweep will', { model, failed });
}
