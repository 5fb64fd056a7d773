import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { positiveIntEnv, requireEnv } from '../config/env';
import { createApiServer } from './api-server';
import {
  SHIPPED_API_PLAN_ENV,
  compileLambdaHost,
  shippedDispatch,
  type ShippedApiPlan,
} from './shipped-api';

/**
 * The local API on the shipped artifacts (PROVISIONER_ARTIFACTS=shipped): the
 * same HTTP server as local/api-server-main.ts, routing by the synthesized
 * template to the Lambda bundles in `cdk.out` (local/shipped-api.ts). None of
 * the TypeScript handlers is loaded.
 */
const planFile = requireEnv(SHIPPED_API_PLAN_ENV);
const plan = JSON.parse(readFileSync(planFile, 'utf8')) as ShippedApiPlan;
const host = compileLambdaHost(join(dirname(planFile), 'lambda-host.cjs'));
const dispatch = shippedDispatch(plan, host, (line) => console.log(line));
const port = positiveIntEnv('PROVISIONER_API_PORT', 3000);
const instanceEvents = plan.instanceEvents;
const server = createApiServer(
  dispatch,
  // EventBridge's target in the cloud; here the stack's EC2 events (local/ec2-events.ts)
  instanceEvents
    ? { instanceEvents: (event) => dispatch.invokeFunction(instanceEvents, event) }
    : {},
);
server.listen(port, '127.0.0.1', () =>
  console.log(`API (shipped bundles) listening on http://127.0.0.1:${port}`),
);

const shutdown = () => {
  dispatch.stop();
  server.close(() => process.exit(0));
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
