import { serviceContext } from './context';
import {
  createModel,
  destroyModel,
  getModel,
  getModelConstraints,
  listModels,
  setModelConstraints,
  updateModel,
} from '../service/models';
import { createHandler, groupOperations, param, parseBody } from './http';
import { openApiDocument } from './openapi-document';
import { CreateModel, ModelsQuery, SetConstraints, UpdateModel } from './schemas';

export const handler = createHandler(
  groupOperations('models', {
    'GET /v1/openapi.json': () => Promise.resolve({ status: 200, body: { ...openApiDocument() } }),
    'POST /v1/models': async (req) => {
      const model = await createModel(
        serviceContext(undefined, req.caller?.user),
        parseBody(CreateModel, req.body),
      );
      return { status: 201, body: model };
    },
    'GET /v1/models': async (req) => {
      const { summary, limit, cursor } = parseBody(ModelsQuery, req.query, 'query parameter');
      // only the models the caller can read; a superuser reads every model
      const page = await listModels(
        serviceContext(),
        req.caller?.access === 'superuser' ? undefined : (req.caller?.user ?? ''),
        {
          summary: summary !== undefined && summary !== 'false',
          ...(limit !== undefined ? { limit: Number(limit) } : {}),
          ...(cursor !== undefined ? { cursor } : {}),
        },
      );
      return { status: 200, body: page };
    },
    'GET /v1/models/{model}': async (req) => ({
      status: 200,
      body: await getModel(serviceContext(), param(req, 'model')),
    }),
    'PATCH /v1/models/{model}': async (req) => ({
      status: 200,
      body: await updateModel(
        serviceContext(),
        param(req, 'model'),
        parseBody(UpdateModel, req.body),
      ),
    }),
    'DELETE /v1/models/{model}': async (req) => {
      await destroyModel(serviceContext(), param(req, 'model'));
      return { status: 202 };
    },
    'GET /v1/models/{model}/constraints': async (req) => ({
      status: 200,
      body: await getModelConstraints(serviceContext(), param(req, 'model')),
    }),
    'PUT /v1/models/{model}/constraints': async (req) => {
      const { constraints } = parseBody(SetConstraints, req.body);
      return {
        status: 200,
        body: await setModelConstraints(serviceContext(), param(req, 'model'), constraints),
      };
    },
    // API Gateway's `$default` route: an authenticated 404 in the contract's shape.
  }),
);
