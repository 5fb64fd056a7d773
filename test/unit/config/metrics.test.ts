import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { launchFailed, launchSent } from '../../../activities/metrics';
import { logger } from '../../../config/logger';
import { recordRequest } from '../../../config/metrics';
import { MAX_SAMPLES, WorkerMetrics } from '../../../config/worker-metrics';
import { adminTokenGate, reportAuditFailure } from '../../../functions/access';
import { createHandler } from '../../../functions/http';
import {
  addSdkUpdates,
  ROUTINE_REFUSED_REQUESTS,
  sampleBacklogGate,
  temporalMetricsFromEnv,
} from '../../../worker/telemetry';

interface Emf {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: Array<{
      Namespace: string;
      Dimensions: string[][];
      Metrics: Array<{ Name: string; Unit: string }>;
    }>;
  };
  [key: string]: unknown;
}

/** Every line written to stdout and stderr while `work` runs (Powertools writes metrics and logs there). */
async function stdoutOf(work: () => unknown): Promise<string[]> {
  const lines: string[] = [];
  const capture = (chunk: unknown) => {
    // JSON lines only (what the code under test writes): a test file run before this one in
    // the same Jest worker may leave a background log (a catch-up window's warning, in the
    // SDK's multi-line text format) that lands here while the work runs
    lines.push(
      ...String(chunk)
        .split('\n')
        .filter((l) => l.startsWith('{"')),
    );
    return true;
  };
  const out = jest.spyOn(process.stdout, 'write').mockImplementation(capture);
  const err = jest.spyOn(process.stderr, 'write').mockImplementation(capture);
  try {
    await work();
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return lines;
}

const emfOf = (lines: string[]): Emf[] =>
  lines.map((l) => JSON.parse(l) as Emf).filter((r) => r._aws !== undefined);

describe('API request metrics (Powertools EMF)', () => {
  it('writes one record with Requests, Latency, ClientErrors and ServerErrors by route and service-wide', async () => {
    const [record, ...rest] = emfOf(
      await stdoutOf(() => recordRequest('POST /v1/models/{model}/machines', 503, 12.3456)),
    );
    expect(rest).toEqual([]);
    const cw = record!._aws.CloudWatchMetrics[0]!;
    expect(cw.Namespace).toBe('Provisioner/local');
    expect(cw.Dimensions).toEqual([['service', 'Route'], ['service']]);
    expect(cw.Metrics).toEqual([
      { Name: 'Requests', Unit: 'Count' },
      { Name: 'Latency', Unit: 'Milliseconds' },
      { Name: 'ClientErrors', Unit: 'Count' },
      { Name: 'ServerErrors', Unit: 'Count' },
    ]);
    expect(record).toMatchObject({
      service: 'provisioner-api',
      Route: 'POST /v1/models/{model}/machines',
      Requests: 1,
      Latency: 12.35,
      ClientErrors: 0,
      ServerErrors: 1,
    });
  });

  it('counts a 4xx as a client error only', async () => {
    const [record] = emfOf(await stdoutOf(() => recordRequest('GET /v1/models', 404, 1)));
    expect(record).toMatchObject({ Route: 'GET /v1/models', ClientErrors: 1, ServerErrors: 0 });
  });
});

describe('AuditWriteFailures', () => {
  it("is counted in the environment's namespace, service-wide, in the line that logs the lost entry", async () => {
    const before = process.env.POWERTOOLS_METRICS_NAMESPACE;
    process.env.POWERTOOLS_METRICS_NAMESPACE = 'Provisioner/staging';
    try {
      const entry = {
        time: '2026-11-25T00:00:00.000Z',
        user: 'alice',
        method: 'POST',
        path: '/v1/models',
        status: 201,
        requestId: 'r-1',
      };
      const [record, ...rest] = emfOf(
        await stdoutOf(() => reportAuditFailure(entry, new Error('throttled'))),
      );
      expect(rest).toEqual([]);
      expect(record!._aws.CloudWatchMetrics).toEqual([
        {
          Namespace: 'Provisioner/staging',
          Dimensions: [['service']],
          Metrics: [{ Name: 'AuditWriteFailures', Unit: 'Count' }],
        },
      ]);
      expect(record).toMatchObject({
        service: 'provisioner-api',
        AuditWriteFailures: 1,
        message: 'audit entry not written',
        audit: entry,
        error: 'Error: throttled',
      });
    } finally {
      if (before === undefined) delete process.env.POWERTOOLS_METRICS_NAMESPACE;
      else process.env.POWERTOOLS_METRICS_NAMESPACE = before;
    }
  });
});

describe('WorkerMetrics', () => {
  const worker = () => new WorkerMetrics({ namespace: () => 'Provisioner/test' });

  it('sums counters between flushes and writes one record per dimension set', async () => {
    const m = worker();
    m.count('Launches', 3);
    m.count('Launches', 2);
    m.count('MachinesInError');
    m.count('LaunchErrors', 4, { Code: 'InsufficientInstanceCapacity' });
    m.count('LaunchErrors', 1, { Code: 'UnauthorizedOperation' });
    const records = emfOf(await stdoutOf(() => m.flush()));
    expect(records).toHaveLength(3);
    const plain = records.find((r) => r.Code === undefined)!;
    expect(plain._aws.CloudWatchMetrics[0]).toMatchObject({
      Namespace: 'Provisioner/test',
      Dimensions: [['service']],
      Metrics: [
        { Name: 'Launches', Unit: 'Count' },
        { Name: 'MachinesInError', Unit: 'Count' },
      ],
    });
    expect(plain).toMatchObject({ service: 'provisioner-worker', Launches: 5, MachinesInError: 1 });
    const byCode = Object.fromEntries(
      records.filter((r) => r.Code !== undefined).map((r) => [r.Code, r.LaunchErrors]),
    );
    expect(byCode).toEqual({ InsufficientInstanceCapacity: 4, UnauthorizedOperation: 1 });
    for (const r of records.filter((r) => r.Code !== undefined)) {
      expect(r._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service', 'Code'], ['service']]);
    }
    // flushed: nothing is written twice, and an idle interval writes nothing
    expect(emfOf(await stdoutOf(() => m.flush()))).toEqual([]);
  });

  it('keeps a distribution as its values, at most MAX_SAMPLES of them', async () => {
    const m = worker();
    for (let i = 1; i <= 250; i++) m.observe('BatchSize', i);
    const [record, ...rest] = emfOf(await stdoutOf(() => m.flush()));
    expect(rest).toEqual([]);
    const values = record!.BatchSize as number[];
    expect(values).toHaveLength(MAX_SAMPLES);
    expect(values.every((v) => Number.isInteger(v) && v >= 1 && v <= 250)).toBe(true);
  });

  it('counts a batch: launches served, its size, the unserved as capacity errors and failovers', async () => {
    const m = worker();
    launchSent(10, 7, m);
    const failure = Object.assign(new Error('no capacity'), {
      name: 'InsufficientInstanceCapacity',
    });
    launchFailed(failure, 5, m);
    launchFailed(Object.assign(new Error('denied'), { name: 'UnauthorizedOperation' }), 2, m);
    const records = emfOf(await stdoutOf(() => m.flush()));
    const sum = (name: string, code?: string) =>
      records
        .filter((r) => r.Code === code && r[name] !== undefined)
        .map((r) => r[name])
        .flat()
        .reduce((a: number, b) => a + Number(b), 0);
    expect(sum('Launches')).toBe(7);
    expect(sum('ZoneFailovers')).toBe(3 + 5);
    expect(sum('LaunchErrors', 'InsufficientInstanceCapacity')).toBe(3 + 5);
    expect(sum('LaunchErrors', 'UnauthorizedOperation')).toBe(2);
    expect(records.find((r) => r.BatchSize !== undefined)!.BatchSize).toEqual([10, 5, 2]);
  });

  it("adds the Temporal SDK's drained updates: counters summed, histograms and gauges sampled", async () => {
    const m = worker();
    addSdkUpdates(
      [
        { metric: { name: 'temporal_request', kind: 'counter' }, value: 2 },
        { metric: { name: 'temporal_request', kind: 'counter' }, value: 3 },
        {
          metric: {
            name: 'temporal_workflow_task_schedule_to_start_latency',
            kind: 'histogram',
            unit: 'ms',
          },
          value: 42,
        },
      ],
      m,
    );
    const records = emfOf(await stdoutOf(() => m.flush()));
    expect(records.find((r) => r.temporal_request !== undefined)!.temporal_request).toBe(5);
    const latency = records.find(
      (r) => r.temporal_workflow_task_schedule_to_start_latency !== undefined,
    )!;
    expect(latency.temporal_workflow_task_schedule_to_start_latency).toBe(42);
    expect(latency._aws.CloudWatchMetrics[0]!.Metrics).toEqual([
      { Name: 'temporal_workflow_task_schedule_to_start_latency', Unit: 'Milliseconds' },
    ]);
  });

  it("samples the backlog gate's counts: free workflow slots, backlog, waiting reservations, local activities", async () => {
    const m = worker();
    const gate = {
      issued: 130,
      backlog: 100,
      waiters: 2,
      localActivitiesRunning: 30,
      slotCap: 1000,
    };
    sampleBacklogGate(gate, m);
    sampleBacklogGate({ ...gate, issued: 20, backlog: 5, waiters: 0 }, m);
    const records = emfOf(await stdoutOf(() => m.flush()));
    const samples = (name: string) => records.find((r) => r[name] !== undefined)![name];
    expect(samples('workflow_task_slots_free')).toEqual([870, 980]);
    expect(samples('workflow_task_backlog')).toEqual([100, 5]);
    expect(samples('workflow_task_reservations_waiting')).toEqual([2, 0]);
    expect(samples('local_activities_running')).toEqual([30, 30]);
  });

  it("counts a request failure NOT_FOUND or ALREADY_EXISTS (the sweep's gone workflows, an existing sweeper) apart from real failures", async () => {
    const m = worker();
    const failure = (status: string | undefined, value: number) => ({
      metric: { name: 'temporal_request_failure', kind: 'counter' },
      value,
      ...(status
        ? { attributes: { operation: 'SignalWorkflowExecution', status_code: status } }
        : {}),
    });
    addSdkUpdates(
      [
        failure('NOT_FOUND', 4),
        failure('ALREADY_EXISTS', 1),
        failure('UNAVAILABLE', 2),
        failure('TRANSPORT_ERROR', 1),
        failure(undefined, 3),
      ],
      m,
    );
    const records = emfOf(await stdoutOf(() => m.flush()));
    expect(
      records.find((r) => r.temporal_request_failure !== undefined)!.temporal_request_failure,
    ).toBe(6);
    expect(
      records.find((r) => r[ROUTINE_REFUSED_REQUESTS] !== undefined)![ROUTINE_REFUSED_REQUESTS],
    ).toBe(5);
  });
});

describe('temporalMetricsFromEnv', () => {
  it.each([
    [{}, { kind: 'emf' }],
    [{ PROVISIONER_TEMPORAL_METRICS: 'off' }, { kind: 'off' }],
    [
      { PROVISIONER_TEMPORAL_METRICS: 'prometheus:127.0.0.1:9464' },
      { kind: 'prometheus', bindAddress: '127.0.0.1:9464' },
    ],
  ])('reads %j', (env, mode) => {
    expect(temporalMetricsFromEnv(env)).toEqual(mode);
  });

  it('names the variable and the forms it takes when the value is none of them', () => {
    expect(() => temporalMetricsFromEnv({ PROVISIONER_TEMPORAL_METRICS: 'statsd' })).toThrow(
      'environment variable PROVISIONER_TEMPORAL_METRICS: "statsd" is not emf, off or prometheus:<host>:<port>',
    );
  });
});

describe('a request through the handler pipeline', () => {
  const TOKEN = 'tok-3f9a1c77e5d24b0c';
  const PASSWORD = 'pw-correct-horse-battery';
  const handler = createHandler(
    {
      'POST /v1/models/{model}/machines': (req) => {
        // an operation that logs (as service code does) with the request's keys attached
        logger.warn('operation ran');
        return Promise.resolve({ status: 201, body: { ok: req.body !== undefined } });
      },
    },
    () => adminTokenGate(() => Promise.resolve(TOKEN)),
  );
  const event = (authorization: string): APIGatewayProxyEventV2 => ({
    version: '2.0',
    routeKey: 'POST /v1/models/{model}/machines',
    rawPath: '/v1/models/demo/machines',
    rawQueryString: `password=${PASSWORD}`,
    queryStringParameters: { password: PASSWORD },
    headers: { authorization },
    pathParameters: { model: 'demo' },
    requestContext: {
      requestId: 'req-123',
      http: { method: 'POST', path: '/v1/models/demo/machines' },
    } as APIGatewayProxyEventV2['requestContext'],
    body: JSON.stringify({ password: PASSWORD, constraints: 'mem=4G' }),
    isBase64Encoded: false,
  });

  it("logs with the request's id, route, model and user, and counts it; no line carries the token or a password", async () => {
    const lines = await stdoutOf(async () => {
      expect((await handler(event(`Bearer ${TOKEN}`))).statusCode).toBe(201);
      expect((await handler(event('Bearer wrong-token-value'))).statusCode).toBe(401);
      // an unhandled error's log line too
    });
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const logged = records.find((r) => r.message === 'operation ran')!;
    expect(logged).toMatchObject({
      level: 'WARN',
      requestId: 'req-123',
      route: 'POST /v1/models/{model}/machines',
      model: 'demo',
      user: 'admin',
    });
    const metrics = emfOf(lines);
    expect(metrics.map((r) => [r.Route, r.Requests, r.ClientErrors])).toEqual([
      ['POST /v1/models/{model}/machines', 1, 0],
      ['POST /v1/models/{model}/machines', 1, 1],
    ]);
    for (const line of lines) {
      expect(line).not.toContain(TOKEN);
      expect(line).not.toContain('wrong-token-value');
      expect(line).not.toContain(PASSWORD);
    }
  });

  it('keeps each of two concurrent requests’ keys on its own lines (one process, as the local server runs them)', async () => {
    // each operation logs once before and once after the other request has set its keys
    let release!: () => void;
    const bothStarted = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    const concurrent = createHandler(
      {
        'GET /v1/models/{model}': async (req) => {
          const model = req.pathParameters.model!;
          logger.info('before', { who: model });
          if (++started === 2) release();
          await bothStarted;
          await new Promise((r) => setImmediate(r));
          logger.info('after', { who: model });
          return { status: 200, body: { name: model } };
        },
      },
      () => adminTokenGate(() => Promise.resolve(TOKEN)),
    );
    const get = (model: string, requestId: string): APIGatewayProxyEventV2 => ({
      version: '2.0',
      routeKey: 'GET /v1/models/{model}',
      rawPath: `/v1/models/${model}`,
      rawQueryString: '',
      headers: { authorization: `Bearer ${TOKEN}` },
      pathParameters: { model },
      requestContext: {
        requestId,
        http: { method: 'GET', path: `/v1/models/${model}` },
      } as APIGatewayProxyEventV2['requestContext'],
      isBase64Encoded: false,
    });
    const lines = await stdoutOf(() =>
      Promise.all([concurrent(get('alpha', 'req-a')), concurrent(get('beta', 'req-b'))]),
    );
    const logged = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.message === 'before' || r.message === 'after')
      .map((r) => [r.who, r.message, r.requestId, r.model, r.route]);
    expect(logged.sort()).toEqual([
      ['alpha', 'after', 'req-a', 'alpha', 'GET /v1/models/{model}'],
      ['alpha', 'before', 'req-a', 'alpha', 'GET /v1/models/{model}'],
      ['beta', 'after', 'req-b', 'beta', 'GET /v1/models/{model}'],
      ['beta', 'before', 'req-b', 'beta', 'GET /v1/models/{model}'],
    ]);
  });

  it('clears the keys after the request: a line logged afterwards carries none of them', async () => {
    const lines = await stdoutOf(async () => {
      await handler(event(`Bearer ${TOKEN}`));
      logger.warn('after');
    });
    const after = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((r) => r.message === 'after')!;
    expect(after.requestId).toBeUndefined();
    expect(after.user).toBeUndefined();
    expect(after.model).toBeUndefined();
  });
});
