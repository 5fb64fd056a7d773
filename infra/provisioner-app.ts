import { Validations, type App } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { resolveEnvironment, stackName, type EnvironmentOverrides } from './config';
import { ProvisionerStack } from './provisioner-stack';

function contextString(app: App, key: string): string | undefined {
  const value: unknown = app.node.tryGetContext(key);
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Adds the stack of the environment named by the `env` context
 * (`-c env=dev`) to `app`; the CLI (`infra/app.ts`) and the tests share it.
 */
export function addProvisionerStack(app: App): ProvisionerStack {
  const overrides: EnvironmentOverrides = {
    temporalAddress: contextString(app, 'temporalAddress'),
    temporalNamespace: contextString(app, 'temporalNamespace'),
    alarmEmail: contextString(app, 'alarmEmail'),
  };
  const config = resolveEnvironment(app.node.tryGetContext('env'), overrides);
  const stack = new ProvisionerStack(app, stackName(config), {
    config,
    env: {
      account: config.account ?? process.env.CDK_DEFAULT_ACCOUNT,
      region: config.region ?? process.env.CDK_DEFAULT_REGION,
    },
    description: `Machine provisioner (${config.name}): table, HTTPS API, Temporal worker, alarms`,
    terminationProtection: config.retainData,
  });
  // AWS Solutions rules run at every synth: a finding fails it unless acknowledged with a reason in code
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return stack;
}
