import { z } from 'zod';
import { serviceContext } from '../service/context';
import { addMachines, reprovisionMachine, retryMachine } from '../service/machines';
import { destroyMachine } from '../service/removal';
import { getMachine } from '../service/status';
import { BadRequestError } from './errors';
import { createHandler, param, parseBody } from './http';

const AddMachines = z.strictObject({
  count: z.number().int().min(1).max(1000).optional(),
  base: z.string().optional(),
  constraints: z.string().optional(),
  placement: z.string().optional(),
});

const Retry = z.strictObject({ constraints: z.string().optional() });

function forceFlag(query: Record<string, string>): boolean {
  const value = query.force;
  if (value === undefined || value === 'false') return false;
  if (value === 'true' || value === '') return true;
  throw new BadRequestError(`query parameter force must be true or false, got "${value}"`);
}

export const handler = createHandler({
  'POST /v1/models/{model}/machines': async (req) => {
    const machines = await addMachines(
      serviceContext(req.step),
      param(req, 'model'),
      parseBody(AddMachines, req.body),
    );
    return { status: 201, body: { machines } };
  },
  'GET /v1/models/{model}/machines/{id}': async (req) => ({
    status: 200,
    body: await getMachine(serviceContext(req.step), param(req, 'model'), param(req, 'id')),
  }),
  'DELETE /v1/models/{model}/machines/{id}': async (req) => {
    await destroyMachine(
      serviceContext(req.step),
      param(req, 'model'),
      param(req, 'id'),
      forceFlag(req.query),
    );
    return { status: 202 };
  },
  'POST /v1/models/{model}/machines/{id}/retry': async (req) => {
    const { constraints } = parseBody(Retry, req.body);
    await retryMachine(
      serviceContext(req.step),
      param(req, 'model'),
      param(req, 'id'),
      constraints,
    );
    return { status: 202 };
  },
  'POST /v1/models/{model}/machines/{id}/reprovision': async (req) => {
    await reprovisionMachine(serviceContext(req.step), param(req, 'model'), param(req, 'id'));
    return { status: 202 };
  },
});
