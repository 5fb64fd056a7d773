import type { CfnElement } from 'aws-cdk-lib';
import { ENVIRONMENT_NAMES } from '../../../infra/config';
import { THROTTLED_CALLS_THRESHOLD } from '../../../infra/constructs/alarms';
import { METRIC } from '../../../config/metrics';
import { resourcesOfType, synthEnvironment } from './synth';

interface AlarmProps {
  Namespace?: string;
  MetricName?: string;
  Dimensions?: Array<{ Name: string; Value: string }>;
  Threshold?: number;
  Statistic?: string;
  Period?: number;
  ComparisonOperator?: string;
  AlarmActions?: unknown[];
}

/**
 * Watchable in the cloud: every environment's template alarms on the
 * provisioner's own EMF metrics (machines in error, handler 5xx, EC2
 * throttling) in that environment's namespace, shows them on its
 * dashboard, and gives each Lambda and the worker that namespace.
 */
describe.each(ENVIRONMENT_NAMES)('Provisioner-%s observability', (env) => {
  const namespace = `Provisioner/${env}`;
  let synth: ReturnType<typeof synthEnvironment>;
  beforeAll(() => {
    synth = synthEnvironment(env, {}, undefined, { bundle: false });
  });
  afterAll(() => synth.cleanup());

  const alarms = () =>
    Object.values(resourcesOfType(synth.template, 'AWS::CloudWatch::Alarm')).map(
      (a) => a.Properties as AlarmProps,
    );

  it.each([
    [METRIC.machinesInError, 'provisioner-worker', 1],
    [METRIC.serverErrors, 'provisioner-api', 5],
    [METRIC.throttledCalls, 'provisioner-worker', THROTTLED_CALLS_THRESHOLD],
  ])(
    'alarms on %s of %s at %d in five minutes, to the alarm topic',
    (metric, service, threshold) => {
      const found = alarms().filter((a) => a.MetricName === metric && a.Namespace === namespace);
      expect(found).toHaveLength(1);
      expect(found[0]).toMatchObject({
        Dimensions: [{ Name: 'service', Value: service }],
        Statistic: 'Sum',
        Period: 300,
        Threshold: threshold,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
      expect(found[0]!.AlarmActions).toHaveLength(1);
    },
  );

  it('shows every metric of the catalogue and the Temporal SDK latencies on the dashboard', () => {
    const [dashboard] = Object.values(
      resourcesOfType(synth.template, 'AWS::CloudWatch::Dashboard'),
    );
    const body = JSON.stringify(dashboard!.Properties!.DashboardBody);
    for (const name of Object.values(METRIC)) {
      expect({ name, shown: body.includes(name) }).toEqual({ name, shown: true });
    }
    for (const shown of [
      `{${namespace},service,Route} MetricName=\\\\\\"Requests\\\\\\"`,
      `{${namespace},service,Code} MetricName=\\\\\\"LaunchErrors\\\\\\"`,
      'temporal_workflow_task_schedule_to_start_latency',
      'temporal_activity_schedule_to_start_latency',
      'temporal_worker_task_slots_available',
      // the backlog gate's counts, which stand for the workflow slots the SDK stops reporting
      'workflow_task_slots_free',
      'workflow_task_backlog',
      'workflow_task_reservations_waiting',
      'local_activities_running',
      // written by the API's audit path in this environment's namespace, service-wide
      `\\"${namespace}\\",\\"AuditWriteFailures\\",\\"service\\",\\"provisioner-api\\"`,
    ]) {
      expect({ shown, found: body.includes(shown) }).toEqual({ shown, found: true });
    }
  });

  it("sets the environment's metrics namespace on every API Lambda and the worker", () => {
    const json = synth.template.toJSON() as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const apiEnvs = [...synth.stack.api.functions.values()].map((fn) => {
      const id = synth.stack.getLogicalId(fn.node.defaultChild as CfnElement);
      return (json.Resources[id]!.Properties.Environment as { Variables: Record<string, unknown> })
        .Variables;
    });
    expect(apiEnvs.length).toBeGreaterThan(0);
    for (const v of apiEnvs) expect(v.POWERTOOLS_METRICS_NAMESPACE).toBe(namespace);
    const [task] = Object.values(json.Resources).filter(
      (r) => r.Type === 'AWS::ECS::TaskDefinition',
    );
    const container = (
      task!.Properties.ContainerDefinitions as Array<{
        Environment: Array<{ Name: string; Value: unknown }>;
      }>
    )[0]!;
    const workerEnv = Object.fromEntries(container.Environment.map((e) => [e.Name, e.Value]));
    expect(workerEnv.POWERTOOLS_METRICS_NAMESPACE).toBe(namespace);
    expect(workerEnv.PROVISIONER_TEMPORAL_METRICS).toBe('emf');
  });
});
