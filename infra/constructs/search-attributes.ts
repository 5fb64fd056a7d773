import { CustomResource, Duration, RemovalPolicy, Stack, type CfnElement } from 'aws-cdk-lib';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { Provider } from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { SEARCH_ATTRIBUTE_REGISTRATIONS } from '../../temporal/search-attributes';
import { bundledFunction } from '../bundling';
import { acknowledge, acknowledgeLambdaDefaults } from '../nag';
import type { TemporalSettings } from '../config';
import type { SearchAttributeResourceProperties } from '../search-attributes/handler';

export interface SearchAttributesProps {
  temporal: TemporalSettings;
  /** Key allowed to add search attributes (Cloud: Namespace Admin via the Cloud Ops API). */
  apiKeySecret: ISecret;
  logRetention: RetentionDays;
}

/**
 * Registers `SEARCH_ATTRIBUTE_REGISTRATIONS` on the configured namespace at
 * deploy time, so nobody has to by hand. Re-runs whenever the list changes.
 */
export class SearchAttributes extends Construct {
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: SearchAttributesProps) {
    super(scope, id);
    const onEvent = bundledFunction(this, 'Handler', {
      entry: 'infra/search-attributes/handler.ts',
      description: 'Registers the provisioner workflows’ Temporal search attributes',
      memoryMiB: 256,
      timeout: Duration.minutes(5),
      logRetention: props.logRetention,
      environment: { POWERTOOLS_SERVICE_NAME: 'provisioner-search-attributes' },
    });
    props.apiKeySecret.grantRead(onEvent);

    const provider = new Provider(this, 'Provider', {
      onEventHandler: onEvent,
      logGroup: new LogGroup(this, 'ProviderLogs', {
        retention: props.logRetention,
        removalPolicy: RemovalPolicy.DESTROY,
      }),
    });

    // the CDK provider framework's own Lambda: its role and runtime are the framework's
    acknowledgeLambdaDefaults(provider);
    acknowledge(
      provider,
      `IAM5[Resource::<${Stack.of(this).getLogicalId(onEvent.node.defaultChild as CfnElement)}.Arn>:*]`,
      'The provider framework may invoke any version of this construct’s own handler, and nothing else',
    );

    const properties: SearchAttributeResourceProperties = {
      Mode: props.temporal.searchAttributes.registration,
      Address: props.temporal.address,
      Namespace: props.temporal.namespace,
      ApiKeySecretArn: props.apiKeySecret.secretArn,
      Attributes: JSON.stringify(SEARCH_ATTRIBUTE_REGISTRATIONS),
    };
    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: provider.serviceToken,
      resourceType: 'Custom::TemporalSearchAttributes',
      properties: { ...properties },
    });
  }
}
