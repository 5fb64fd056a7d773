import { serviceContext } from './context';
import {
  addMachines,
  planAddMachines,
  reprovisionMachine,
  retryMachine,
} from '../service/machines';
import { destroyMachine } from '../service/removal';
import { getMachine } from '../service/status';
import { BadRequestError } from './errors';
import { createHandler, groupOperations, param, parseBody } from './http';
import { AddMachines, ForceQuery, Retry } from './schemas';

function forceFlag(query: Record<string, string>): boolean {
  const parsed = ForceQuery.shape.force.safeParse(query.force);
  if (!parsed.success)
    throw new BadRequestError(
      `query parameter force must be true or false, got "${String(query.force)}"`,
    );
  return parsed.data === 'true' || parsed.data === '';
}

export const handler = createHandler(
  groupOperations('machines', {
    'POST /v1/models/{model}/machines': async (req) => {
      const { dryRun, ...input } = parseBody(AddMachines, req.body);
      const ctx = serviceContext(req.step, req.caller?.user);
      if (dryRun === true) {
        return {
          status: 200,
          body: { plan: await planAddMachines(ctx, param(req, 'model'), input) },
        };
      }
      const machines = await addMachines(ctx, param(req, 'model'), input);
      return { status: 201, body: { machines } };
    },
    'GET /v1/models/{model}/machines/{id}': async (req) => ({
      status: 200,
      body: await getMachine(
        serviceContext(req.step, req.caller?.user),
        param(req, 'model'),
        param(req, 'id'),
      ),
    }),
    'DELETE /v1/models/{model}/machines/{id}': async (req) => {
      await destroyMachine(
        serviceContext(req.step, req.caller?.user),
        param(req, 'model'),
        param(req, 'id'),
        forceFlag(req.query),
      );
      return { status: 202 };
    },
    'POST /v1/models/{model}/machines/{id}/retry': async (req) => {
      const { constraints } = parseBody(Retry, req.body);
      await retryMachine(
        serviceContext(req.step, req.caller?.user),
        param(req, 'model'),
        param(req, 'id'),
        constraints,
      );
      return { status: 202 };
    },
    'POST /v1/models/{model}/machines/{id}/reprovision': async (req) => {
      await reprovisionMachine(
        serviceContext(req.step, req.caller?.user),
        param(req, 'model'),
        param(req, 'id'),
      );
      return { status: 202 };
    },
  }),
);
