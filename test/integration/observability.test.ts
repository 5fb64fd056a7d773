import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { eventually, uniqueName } from './api-client';
import { loadTestStack } from './stack';

const stack = loadTestStack();

/** The local API server's stdout (global-setup puts the stack's data dir beside its stack.json). */
const API_LOG = join(dirname(process.env.PROVISIONER_TEST_STACK_FILE!), 'data', 'logs', 'api.log');

function jsonLines(file: string): Array<Record<string, unknown>> {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        return {};
      }
    });
}

describe('metrics and logs of a request through the local API', () => {
  it("writes the request's EMF record (by route and service-wide) and log lines with its keys, without the token", async () => {
    const name = uniqueName('observe');
    const res = await fetch(`${stack.apiUrl}/v1/models/${name}`, {
      headers: { authorization: `Bearer ${stack.token}` },
    });
    expect(res.status).toBe(404);
    const requestId = res.headers.get('apigw-requestid');
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);

    const record = await eventually(
      () =>
        Promise.resolve(
          jsonLines(API_LOG).find((r) => r._aws !== undefined && r.requestId === requestId),
        ),
      (r) => r !== undefined,
      30_000,
    );
    expect(record).toMatchObject({
      service: 'provisioner-api',
      Route: 'GET /v1/models/{model}',
      Requests: 1,
      ClientErrors: 1,
      ServerErrors: 0,
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: 'Provisioner/local',
            Dimensions: [['service', 'Route'], ['service']],
            Metrics: [
              { Name: 'Requests', Unit: 'Count' },
              { Name: 'Latency', Unit: 'Milliseconds' },
              { Name: 'ClientErrors', Unit: 'Count' },
              { Name: 'ServerErrors', Unit: 'Count' },
            ],
          },
        ],
      },
    });
    expect(typeof record!.Latency).toBe('number');
    expect(readFileSync(API_LOG, 'utf8')).not.toContain(stack.token);
  });

  it("writes the Temporal SDK's own metrics from the worker as EMF in the environment's namespace", async () => {
    const workerLog = join(dirname(API_LOG), 'worker.log');
    const sdk = await eventually(
      () =>
        Promise.resolve(
          jsonLines(workerLog).find(
            (r) =>
              r._aws !== undefined &&
              Object.keys(r).some((k) => k.startsWith('temporal_') && typeof r[k] === 'number'),
          ),
        ),
      (r) => r !== undefined,
      60_000,
    );
    expect(sdk).toMatchObject({
      service: 'provisioner-worker',
      _aws: { CloudWatchMetrics: [{ Namespace: 'Provisioner/local', Dimensions: [['service']] }] },
    });
  });
});
