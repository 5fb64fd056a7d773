import { Logger } from '@aws-lambda-powertools/logger';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { Connection } from '@temporalio/client';
import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda';
import {
  cloudOpsRegistry,
  ensureSearchAttributes,
  operatorServiceRegistry,
  type OperatorService,
  type SearchAttributeRegistry,
  type SearchAttributeSpec,
} from './registration';

/**
 * `onEvent` of the search-attribute custom resource (a CDK `cr.Provider`):
 * Create and Update make sure the attributes exist; Delete leaves them, since
 * workflow histories refer to them and Temporal Cloud cannot delete them.
 */

/** The resource's properties, as CloudFormation hands them over (strings). */
export interface SearchAttributeResourceProperties {
  Mode: 'cloud-ops-api' | 'operator-service';
  Address: string;
  Namespace: string;
  ApiKeySecretArn: string;
  /** JSON of `SearchAttributeSpec[]`. */
  Attributes: string;
}

export class InvalidResourcePropertiesError extends Error {
  override readonly name = 'InvalidResourcePropertiesError';
}

const logger = new Logger({ serviceName: 'provisioner-search-attributes' });
const secrets = new SecretsManagerClient({});

export function parseProperties(raw: Record<string, unknown>): {
  mode: SearchAttributeResourceProperties['Mode'];
  address: string;
  namespace: string;
  apiKeySecretArn: string;
  attributes: SearchAttributeSpec[];
} {
  const { Mode, Address, Namespace, ApiKeySecretArn, Attributes } = raw;
  if (Mode !== 'cloud-ops-api' && Mode !== 'operator-service') {
    throw new InvalidResourcePropertiesError(
      `Mode must be cloud-ops-api or operator-service, got ${String(Mode)}`,
    );
  }
  for (const [key, value] of Object.entries({ Address, Namespace, ApiKeySecretArn, Attributes })) {
    if (typeof value !== 'string' || value === '') {
      throw new InvalidResourcePropertiesError(`${key} must be a non-empty string`);
    }
  }
  const attributes = JSON.parse(Attributes as string) as unknown;
  if (
    !Array.isArray(attributes) ||
    !attributes.every(
      (a: unknown) =>
        typeof (a as SearchAttributeSpec).name === 'string' &&
        typeof (a as SearchAttributeSpec).cliType === 'string',
    )
  ) {
    throw new InvalidResourcePropertiesError('Attributes must be a JSON list of { name, cliType }');
  }
  return {
    mode: Mode,
    address: Address as string,
    namespace: Namespace as string,
    apiKeySecretArn: ApiKeySecretArn as string,
    attributes: attributes as SearchAttributeSpec[],
  };
}

async function readSecret(secretId: string): Promise<string> {
  const out = await secrets.send(new GetSecretValueCommand({ SecretId: secretId }));
  const value = out.SecretString?.trim();
  if (!value) throw new InvalidResourcePropertiesError(`secret ${secretId} has no string value`);
  return value;
}

export async function handler(
  event: CloudFormationCustomResourceEvent,
  context?: Context,
): Promise<{ PhysicalResourceId: string; Data?: Record<string, string> }> {
  if (context) logger.addContext(context);
  logger.appendKeys({ requestId: event.RequestId, route: event.RequestType });
  const props = parseProperties(event.ResourceProperties);
  const physicalId = `${props.namespace}/search-attributes`;
  if (event.RequestType === 'Delete') return { PhysicalResourceId: event.PhysicalResourceId };

  const apiKey = await readSecret(props.apiKeySecretArn);
  let connection: Connection | undefined;
  try {
    let registry: SearchAttributeRegistry;
    if (props.mode === 'cloud-ops-api') {
      registry = cloudOpsRegistry({ namespace: props.namespace, apiKey, fetch });
    } else {
      connection = await Connection.connect({ address: props.address, apiKey, tls: true });
      const service: OperatorService = connection.operatorService;
      registry = operatorServiceRegistry(service, props.namespace);
    }
    const result = await ensureSearchAttributes(registry, props.attributes);
    logger.info('search attributes registered', { namespace: props.namespace, ...result });
    return {
      PhysicalResourceId: physicalId,
      Data: { Added: result.added.join(','), Present: result.present.join(',') },
    };
  } finally {
    await connection?.close();
  }
}
