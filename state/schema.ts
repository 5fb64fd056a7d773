/**
 * The DynamoDB table's key schema: one source of truth for the repository
 * code, the local stack's table creation and the CDK stack.
 */
export interface IndexSchema {
  indexName: string;
  partitionKey: string;
  sortKey: string;
}

export const TABLE_SCHEMA = {
  partitionKey: 'pk',
  sortKey: 'sk',
  /** Overloaded global secondary indexes; what each holds is documented in state/README.md. */
  globalSecondaryIndexes: [
    { indexName: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
    { indexName: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk' },
  ] as readonly IndexSchema[],
  /** Every key attribute is a string. */
  attributeType: 'S' as const,
  /** Items carrying this attribute (epoch seconds) are deleted by DynamoDB's TTL once it passes. */
  timeToLiveAttribute: 'expiresAt',
} as const;

export const DEFAULT_TABLE_NAME = 'provisioner';
