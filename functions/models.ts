import { z } from 'zod';
import { serviceContext } from '../service/context';
import { createModel, getModel, listModels } from '../service/models';
import { HARVEST_MODES } from '../state/types';
import { createHandler, param, parseBody } from './http';

const CreateModel = z.strictObject({
  name: z.string(),
  region: z.string().optional(),
  constraints: z.string().optional(),
  harvestMode: z.enum(HARVEST_MODES as [string, ...string[]]).optional(),
});

export const handler = createHandler({
  'POST /v1/models': async (req) => {
    const body = parseBody(CreateModel, req.body);
    const model = await createModel(serviceContext(), {
      ...body,
      harvestMode: body.harvestMode as never,
    });
    return { status: 201, body: model };
  },
  'GET /v1/models': async () => ({
    status: 200,
    body: { models: await listModels(serviceContext()) },
  }),
  'GET /v1/models/{model}': async (req) => ({
    status: 200,
    body: await getModel(serviceContext(), param(req, 'model')),
  }),
});
