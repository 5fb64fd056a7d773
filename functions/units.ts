import { serviceContext } from './context';
import { removeUnit } from '../service/unit-removal';
import { addUnits } from '../service/units';
import { planAddUnits } from '../service/unit-plan';
import { createHandler, groupOperations, param, parseBody } from './http';
import { AddUnits } from './schemas';

export const handler = createHandler(
  groupOperations('units', {
    'POST /v1/models/{model}/applications/{app}/units': async (req) => {
      const body = parseBody(AddUnits, req.body);
      if (body.dryRun === true) {
        const plan = await planAddUnits(
          serviceContext(req.step, req.caller?.user),
          param(req, 'model'),
          param(req, 'app'),
          body.count ?? 1,
          body.to ?? [],
        );
        return { status: 200, body: { plan } };
      }
      const units = await addUnits(
        serviceContext(req.step, req.caller?.user),
        param(req, 'model'),
        param(req, 'app'),
        body.count ?? 1,
        body.to ?? [],
      );
      return { status: 201, body: { units } };
    },
    'DELETE /v1/models/{model}/units/{app}/{n}': async (req) => {
      await removeUnit(
        serviceContext(req.step, req.caller?.user),
        param(req, 'model'),
        `${param(req, 'app')}/${param(req, 'n')}`,
      );
      return { status: 202 };
    },
  }),
);
