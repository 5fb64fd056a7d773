/**
 * The DynamoDB table's key schema: one source of truth for the repository
 * code, the local stack's table creation and the CDK stack.
 */
export interface IndexSchema {
  indexName: string;
  partitionKey: string;
  sortKey: string;
  /** What the index holds besides its keys and the table's (ALL when absent). */
  projection?: 'ALL' | 'KEYS_ONLY';
}

/** The index of machines by instance id. */
export const INSTANCE_INDEX = 'byInstance';

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
    /**
     * A machine by its recorded instance id (issue 30): the instance-events
     * Lambda and the sweep find an instance's machine here instead of by a
     * per-machine tag. Keyed on the machine's own `instanceId` attribute, so
     * no write sets anything for it; sparse (only items recording an
     * instance) and keys only, so a write that leaves `instanceId` alone
     * costs the index nothing.
     */
    {
      indexName: INSTANCE_INDEX,
      partitionKey: 'instanceId',
      sortKey: 'pk',
      projection: 'KEYS_ONLY',
    },
  ] as readonly IndexSchema[],
  /** Every key attribute is a string. */
  attributeType: 'S' as const,
  /** Items carrying this attribute (epoch seconds) are deleted by DynamoDB's TTL once it passes. */
  timeToLiveAttribute: 'expiresAt',
} as const;

export const DEFAULT_TABLE_NAME = 'provisioner';
