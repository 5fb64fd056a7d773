import { z } from 'zod';
import { serviceContext } from '../service/context';
import { addMachines } from '../service/machines';
import { getMachine } from '../service/status';
import { createHandler, param, parseBody } from './http';

const AddMachines = z.strictObject({
  count: z.number().optional(),
  base: z.string().optional(),
  constraints: z.string().optional(),
  placement: z.string().optional(),
});

export const handler = createHandler({
  'POST /v1/models/{model}/machines': async (req) => {
    const body = parseBody(AddMachines, req.body);
    const machines = await addMachines(serviceContext(), param(req, 'model'), body);
    return { status: 201, body: { machines } };
  },
  'GET /v1/models/{model}/machines/{id}': async (req) => ({
    status: 200,
    body: await getMachine(serviceContext(), param(req, 'model'), param(req, 'id')),
  }),
});
