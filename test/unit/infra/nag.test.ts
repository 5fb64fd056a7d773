import { App } from 'aws-cdk-lib';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { ENVIRONMENT_NAMES } from '../../../infra/config';
import { addProvisionerStack } from '../../../infra/provisioner-app';
import { cdkJsonContext, synthEnvironment } from './synth';

const PROD_CONTEXT = {
  temporalAddress: 'provisioner-prod.a1b2c.tmprl.cloud:7233',
  temporalNamespace: 'provisioner-prod.a1b2c',
  alarmEmail: 'oncall@example.org',
};

describe('AWS Solutions checks (cdk-nag)', () => {
  it.each(ENVIRONMENT_NAMES)(
    'pass for %s: every finding is fixed or acknowledged with a reason',
    (env) => {
      const synth = synthEnvironment(env, env === 'prod' ? PROD_CONTEXT : {});
      try {
        const acknowledged = synth.stack.node
          .findAll()
          .flatMap((c) => c.node.metadata)
          .filter((m) => m.type === 'aws:cdk:acknowledged-rules')
          .flatMap((m) => Object.entries(m.data as Record<string, string>))
          .filter(([id]) => id.includes('AwsSolutions-'))
          .map(([id, reason]) => [id.replace(/^annotation::/i, ''), reason] as const);
        expect(acknowledged.map(([id]) => id)).toEqual(
          expect.arrayContaining(['AwsSolutions-APIG4', 'AwsSolutions-SMG4', 'AwsSolutions-ECS2']),
        );
        for (const [, reason] of acknowledged) {
          expect(reason.length).toBeGreaterThan(40); // a reason, not a placeholder
        }
      } finally {
        synth.cleanup();
      }
    },
  );

  it('fail the synth on a finding nobody acknowledged', () => {
    const app = new App({ context: { ...cdkJsonContext(), env: 'dev' } });
    const stack = addProvisionerStack(app);
    new Secret(stack, 'Unrotated');
    const quiet = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      let message = '';
      try {
        app.synth();
      } catch (err) {
        message = String(err);
      }
      expect(message).toMatch(/AwsSolutions-SMG4/);
      expect(message).toContain('Unrotated');
    } finally {
      quiet.mockRestore();
    }
  });
});
