import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  recordSend,
  type Bucket,
  type LaunchRecord,
  type LaunchSend,
  type RecordedBucket,
} from '../core/launch-estimate';
import { documentClient } from './table';

/** The record's key: one item per deployment and region (EC2's buckets are per account and region). */
export const launchRecordPk = (deployment: string): string => `LAUNCHES#${deployment}`;
export const launchRecordSk = (region: string): string => `#REGION#${region}`;

/** Attempts at one write before it is given up (each loss re-reads the record). */
const MAX_TRIES = 8;

function isBucket(v: unknown): v is RecordedBucket {
  const b = v as Partial<RecordedBucket> | undefined;
  return (
    typeof b?.burst === 'number' && typeof b.perSecond === 'number' && typeof b.fullAt === 'number'
  );
}

function parse(item: Record<string, unknown> | undefined): LaunchRecord | undefined {
  if (!item || !isBucket(item.requests) || !isBucket(item.instances)) return undefined;
  return {
    requests: item.requests,
    instances: item.instances,
    version: typeof item.version === 'number' ? item.version : 0,
  };
}

/**
 * This deployment's recent launches, as one item per region (DESIGN.md
 * "Launching at scale"; API.md "Plans (dry run)": the estimate counts what
 * this deployment launched recently). The worker's launch batcher writes it
 * once per RunInstances it sends, after the call (never per machine, never
 * before the launch): the two buckets as GCRA full-again times, under the
 * item's version, so that workers writing at once each count. A plan reads
 * it with one GetItem. Cost: one write (1 WCU: the item is under 1 KB) per
 * RunInstances, plus one read and one write per lost race between workers;
 * one read (1 RCU, strongly consistent) per plan.
 */
export class LaunchRecordStore {
  private readonly doc: DynamoDBDocumentClient;
  /** The record as this process last wrote or read it, per region: a write needs no read first. */
  private readonly known = new Map<string, LaunchRecord | undefined>();
  /** The last write of each region, which the next one waits for. */
  private readonly writing = new Map<string, Promise<void>>();

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
    readonly deployment: string,
  ) {
    this.doc = documentClient(client);
  }

  /** The record of a region; undefined when this deployment never launched there. */
  async read(region: string): Promise<LaunchRecord | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: launchRecordPk(this.deployment), sk: launchRecordSk(region) },
        ConsistentRead: true,
      }),
    );
    return parse(out.Item);
  }

  /**
   * Counts one RunInstances sent in `region` (the buckets are the writer's
   * settings). This process's writes of one region go one after the other,
   * so they never race each other; only other workers' writes can.
   */
  record(
    region: string,
    buckets: { requests: Bucket; instances: Bucket },
    send: LaunchSend,
  ): Promise<void> {
    const previous = this.writing.get(region) ?? Promise.resolve();
    const write = previous.catch(() => undefined).then(() => this.write(region, buckets, send));
    this.writing.set(region, write);
    void write
      .catch(() => undefined)
      .then(() => {
        if (this.writing.get(region) === write) this.writing.delete(region);
      });
    return write;
  }

  private async write(
    region: string,
    buckets: { requests: Bucket; instances: Bucket },
    send: LaunchSend,
  ): Promise<void> {
    let before = this.known.has(region) ? this.known.get(region) : await this.read(region);
    for (let attempt = 1; ; attempt++) {
      const next = recordSend(before, buckets, send);
      try {
        await this.doc.send(
          new PutCommand({
            TableName: this.tableName,
            Item: {
              pk: launchRecordPk(this.deployment),
              sk: launchRecordSk(region),
              type: 'launch-record',
              requests: next.requests,
              instances: next.instances,
              version: next.version,
              updatedAt: new Date(send.atMs).toISOString(),
            },
            ConditionExpression: before ? '#version = :version' : 'attribute_not_exists(pk)',
            ...(before
              ? {
                  ExpressionAttributeNames: { '#version': 'version' },
                  ExpressionAttributeValues: { ':version': before.version },
                }
              : {}),
          }),
        );
        this.known.set(region, next);
        return;
      } catch (err) {
        // another worker wrote first (or this process's copy is old): read, count again
        if (!(err instanceof ConditionalCheckFailedException) || attempt >= MAX_TRIES) {
          this.known.delete(region);
          throw err;
        }
        before = await this.read(region);
      }
    }
  }
}
