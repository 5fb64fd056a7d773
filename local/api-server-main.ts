import { positiveIntEnv } from '../config/env';
import { handler as applications } from '../functions/applications';
import { handler as identity } from '../functions/identity';
import { handler as instanceEvents } from '../functions/instance-events';
import { handler as machines } from '../functions/machines';
import { handler as models } from '../functions/models';
import { handler as status } from '../functions/status';
import { handler as units } from '../functions/units';
import { createApiServer } from './api-server';

/** The local API: the very Lambda handlers the cloud runs, behind a plain HTTP server on loopback. */
const port = positiveIntEnv('PROVISIONER_API_PORT', 3000);
const server = createApiServer(
  { models, applications, units, machines, status, identity },
  // EventBridge's target in the cloud; here the stack's EC2 events (local/ec2-events.ts)
  { instanceEvents: (event) => instanceEvents(event) },
);
server.listen(port, '127.0.0.1', () => console.log(`API listening on http://127.0.0.1:${port}`));

const shutdown = () => server.close(() => process.exit(0));
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
