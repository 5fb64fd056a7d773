import { z } from 'zod';
import { serviceContext } from '../service/context';
import { removeUnit } from '../service/unit-removal';
import { addUnits } from '../service/units';
import { createHandler, param, parseBody } from './http';

const AddUnits = z.strictObject({
  count: z.number().int().min(1).max(1000).optional(),
  to: z.array(z.string()).max(1000).optional(),
});

export const handler = createHandler({
  'POST /v1/models/{model}/applications/{app}/units': async (req) => {
    const body = parseBody(AddUnits, req.body);
    const units = await addUnits(
      serviceContext(req.step),
      param(req, 'model'),
      param(req, 'app'),
      body.count ?? 1,
      body.to ?? [],
    );
    return { status: 201, body: { units } };
  },
  'DELETE /v1/models/{model}/units/{app}/{n}': async (req) => {
    await removeUnit(
      serviceContext(req.step),
      param(req, 'model'),
      `${param(req, 'app')}/${param(req, 'n')}`,
    );
    return { status: 202 };
  },
});
