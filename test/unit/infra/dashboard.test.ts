import { ENVIRONMENT_NAMES } from '../../../infra/config';
import { resourcesOfType, synthEnvironment } from './synth';

describe.each(ENVIRONMENT_NAMES)('Provisioner-%s dashboard', (env) => {
  it('has one CloudWatch dashboard with the API, Lambda, table and worker metrics, and its URL as an output', () => {
    const synth = synthEnvironment(env, {}, undefined, { bundle: false });
    try {
      const dashboards = Object.values(
        resourcesOfType(synth.template, 'AWS::CloudWatch::Dashboard'),
      );
      expect(dashboards).toHaveLength(1);
      expect(dashboards[0]!.Properties!.DashboardName).toBe(`provisioner-${env}`);
      const body = JSON.stringify(dashboards[0]!.Properties!.DashboardBody);
      for (const metric of [
        '\\"Count\\"',
        '\\"4xx\\"',
        '\\"5xx\\"',
        '\\"Latency\\"',
        '\\"Errors\\"',
        '\\"Throttles\\"',
        '\\"Duration\\"',
        '\\"ReadThrottleEvents\\"',
        '\\"WriteThrottleEvents\\"',
        '\\"RunningTaskCount\\"',
      ]) {
        expect({ metric, shown: body.includes(metric) }).toEqual({ metric, shown: true });
      }
      const outputs = synth.template.findOutputs('DashboardUrl');
      expect(JSON.stringify(Object.values(outputs)[0]!.Value)).toContain(
        `#dashboards:name=provisioner-${env}`,
      );
    } finally {
      synth.cleanup();
    }
  });
});
