import { z } from 'zod';
import {
  deploy,
  destroyApplication,
  getApplication,
  getApplicationConstraints,
  relate,
  setApplicationConstraints,
} from '../service/applications';
import { serviceContext } from '../service/context';
import { createHandler, param, parseBody } from './http';
import { SetConstraints } from './models';

const Deploy = z.strictObject({
  name: z.string(),
  base: z.string(),
  charm: z.string().optional(),
  constraints: z.string().optional(),
  numUnits: z.number().int().min(0).max(1000).optional(),
  to: z.array(z.string()).max(1000).optional(),
  subordinate: z.boolean().optional(),
});

const Relate = z.strictObject({ endpoints: z.array(z.string()) });

export const handler = createHandler({
  'POST /v1/models/{model}/applications': async (req) => ({
    status: 201,
    body: await deploy(serviceContext(req.step), param(req, 'model'), parseBody(Deploy, req.body)),
  }),
  'GET /v1/models/{model}/applications/{app}': async (req) => ({
    status: 200,
    body: await getApplication(serviceContext(req.step), param(req, 'model'), param(req, 'app')),
  }),
  'DELETE /v1/models/{model}/applications/{app}': async (req) => {
    await destroyApplication(serviceContext(req.step), param(req, 'model'), param(req, 'app'));
    return { status: 202 };
  },
  'GET /v1/models/{model}/applications/{app}/constraints': async (req) => ({
    status: 200,
    body: await getApplicationConstraints(
      serviceContext(req.step),
      param(req, 'model'),
      param(req, 'app'),
    ),
  }),
  'PUT /v1/models/{model}/applications/{app}/constraints': async (req) => {
    const { constraints } = parseBody(SetConstraints, req.body);
    return {
      status: 200,
      body: await setApplicationConstraints(
        serviceContext(req.step),
        param(req, 'model'),
        param(req, 'app'),
        constraints,
      ),
    };
  },
  'POST /v1/models/{model}/relations': async (req) => {
    const { endpoints } = parseBody(Relate, req.body);
    return {
      status: 201,
      body: await relate(serviceContext(req.step), param(req, 'model'), endpoints),
    };
  },
});
