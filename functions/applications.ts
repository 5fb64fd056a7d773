import {
  deploy,
  destroyApplication,
  getApplication,
  getApplicationConstraints,
  planDeploy,
  relate,
  setApplicationConstraints,
} from '../service/applications';
import { serviceContext } from './context';
import { createHandler, groupOperations, param, parseBody } from './http';
import { Deploy, Relate, SetConstraints } from './schemas';

export const handler = createHandler(
  groupOperations('applications', {
    'POST /v1/models/{model}/applications': async (req) => {
      const { dryRun, ...input } = parseBody(Deploy, req.body);
      const ctx = serviceContext(req.step, req.caller?.user);
      if (dryRun === true) {
        return { status: 200, body: { plan: await planDeploy(ctx, param(req, 'model'), input) } };
      }
      return { status: 201, body: await deploy(ctx, param(req, 'model'), input) };
    },
    'GET /v1/models/{model}/applications/{app}': async (req) => ({
      status: 200,
      body: await getApplication(
        serviceContext(req.step, req.caller?.user),
        param(req, 'model'),
        param(req, 'app'),
      ),
    }),
    'DELETE /v1/models/{model}/applications/{app}': async (req) => {
      await destroyApplication(
        serviceContext(req.step, req.caller?.user),
        param(req, 'model'),
        param(req, 'app'),
      );
      return { status: 202 };
    },
    'GET /v1/models/{model}/applications/{app}/constraints': async (req) => ({
      status: 200,
      body: await getApplicationConstraints(
        serviceContext(req.step, req.caller?.user),
        param(req, 'model'),
        param(req, 'app'),
      ),
    }),
    'PUT /v1/models/{model}/applications/{app}/constraints': async (req) => {
      const { constraints } = parseBody(SetConstraints, req.body);
      return {
        status: 200,
        body: await setApplicationConstraints(
          serviceContext(req.step, req.caller?.user),
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
        body: await relate(
          serviceContext(req.step, req.caller?.user),
          param(req, 'model'),
          endpoints,
        ),
      };
    },
  }),
);
