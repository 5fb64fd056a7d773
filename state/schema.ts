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
  /**
   * Overloaded global secondary indexes; what each holds is documented in
   * state/README.md. `gsi2` (machines by status) was dropped: every status
   * write paid for it and nothing but a test read it. Machine items written
   * before still carry `gsi2pk`/`gsi2sk`; harmless, as nothing reads them and
   * no index projects them.
   */
  globalSecondaryIndexes: [
    { indexName: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
  ] as readonly IndexSchema[],
  /** Every key attribute is a string. */
  attributeType: 'S' as const,
  /** Items carrying this attribute (epoch seconds) are deleted by DynamoDB's TTL once it passes. */
  timeToLiveAttribute: 'expiresAt',
} as const;

export const DEFAULT_TABLE_NAME = 'provisioner';
