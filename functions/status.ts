import { serviceContext } from './context';
import { modelStatus } from '../service/status';
import { createHandler, groupOperations, param } from './http';

export const handler = createHandler(
  groupOperations('status', {
    'GET /v1/models/{model}/status': async (req) => ({
      status: 200,
      body: await modelStatus(serviceContext(), param(req, 'model')),
    }),
  }),
);
