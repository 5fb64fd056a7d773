import { App } from 'aws-cdk-lib';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import {
  ENVIRONMENT_NAMES,
  InvalidEnvironmentConfigError,
  UnknownEnvironmentError,
  deploymentId,
  resolveEnvironment,
  stackName,
  temporalUiUrl,
  validateEnvironment,
} from '../../../infra/config';
import { addProvisionerStack } from '../../../infra/provisioner-app';

describe('resolveEnvironment', () => {
  it.each(ENVIRONMENT_NAMES)('knows %s', (name) => {
    const config = resolveEnvironment(name);
    expect(config.name).toBe(name);
    expect(stackName(config)).toBe(`Provisioner-${name}`);
    expect(deploymentId(config)).toBe(`provisioner-${name}`);
    expect(config.temporal.apiKeySecretName).toBe(`provisioner/${name}/temporal-api-key`);
  });

  it('keeps data only outside dev', () => {
    expect(ENVIRONMENT_NAMES.map((n) => [n, resolveEnvironment(n).retainData])).toEqual([
      ['dev', false],
      ['staging', true],
      ['prod', true],
    ]);
  });

  it('keeps dev cheap: no NAT gateway, one task, a week of logs', () => {
    const dev = resolveEnvironment('dev');
    expect(dev.worker).toMatchObject({ natGateways: 0, desiredCount: 1 });
    expect(dev.logRetention).toBe(RetentionDays.ONE_WEEK);
  });

  it.each([
    ['qa', 'unknown environment "qa": valid environments are dev, staging, prod'],
    ['Prod', 'unknown environment "Prod": valid environments are dev, staging, prod'],
    [42, 'unknown environment 42: valid environments are dev, staging, prod'],
  ])('refuses %p, listing the valid names', (name, message) => {
    expect(() => resolveEnvironment(name)).toThrow(new UnknownEnvironmentError(message));
  });

  it.each([undefined, ''])('asks for an environment when given %p', (name) => {
    expect(() => resolveEnvironment(name)).toThrow(
      new UnknownEnvironmentError(
        'no environment given: pass -c env=<name>, one of dev, staging, prod',
      ),
    );
  });

  it('takes the Temporal endpoint and alarm email from overrides', () => {
    const config = resolveEnvironment('staging', {
      temporalAddress: 'prov-staging.abc12.tmprl.cloud:7233',
      temporalNamespace: 'prov-staging.abc12',
      alarmEmail: 'ops@example.org',
    });
    expect(config.temporal).toMatchObject({
      address: 'prov-staging.abc12.tmprl.cloud:7233',
      namespace: 'prov-staging.abc12',
    });
    expect(config.alarmEmail).toBe('ops@example.org');
    expect(temporalUiUrl(config.temporal)).toBe(
      'https://cloud.temporal.io/namespaces/prov-staging.abc12/workflows',
    );
  });

  it.each([
    [{ temporalAddress: 'no-port.example' }, 'temporal address "no-port.example" is not host:port'],
    [{ alarmEmail: 'nobody' }, 'alarm email "nobody" is not an email address'],
  ])('refuses invalid overrides %p', (overrides, problem) => {
    expect(() => resolveEnvironment('dev', overrides)).toThrow(
      new InvalidEnvironmentConfigError(`environment dev: ${problem}`),
    );
  });

  it('accepts its own secret names and would refuse one that looks suffixed', () => {
    for (const name of ENVIRONMENT_NAMES) {
      expect(resolveEnvironment(name).temporal.apiKeySecretName).not.toMatch(/-[A-Za-z0-9]{6}$/);
    }
    expect(() =>
      validateEnvironment({
        ...resolveEnvironment('dev'),
        temporal: { ...resolveEnvironment('dev').temporal, apiKeySecretName: 'temporal-apikey' },
      }),
    ).toThrow(
      new InvalidEnvironmentConfigError(
        'environment dev: secret name "temporal-apikey" ends like a Secrets Manager suffix (-xxxxxx)',
      ),
    );
  });

  it('uses no UI URL for a self-hosted service unless configured', () => {
    const temporal = resolveEnvironment('dev').temporal;
    const selfHosted = {
      ...temporal,
      searchAttributes: { registration: 'operator-service' as const },
    };
    expect(temporalUiUrl(selfHosted)).toBeUndefined();
    expect(temporalUiUrl({ ...selfHosted, uiUrl: 'https://temporal.internal' })).toBe(
      'https://temporal.internal',
    );
  });
});

describe('addProvisionerStack', () => {
  it('refuses an unknown env context before building anything', () => {
    const app = new App({ context: { env: 'qa' } });
    expect(() => addProvisionerStack(app)).toThrow(UnknownEnvironmentError);
    expect(app.node.children).toHaveLength(0);
  });

  it('refuses a missing env context', () => {
    expect(() => addProvisionerStack(new App())).toThrow(
      'no environment given: pass -c env=<name>, one of dev, staging, prod',
    );
  });
});
