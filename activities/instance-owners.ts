import type { Ec2Instance as Instance } from '../ec2/instances';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LaunchBatchStore } from '../state/launch-batches';
import { TAG_LAUNCH_BATCH, TAG_MACHINE, tagValue } from '../ec2/tags';

/** Batches whose members are kept in memory (members never change once a batch went out). */
const CACHED_BATCHES = 5_000;

/**
 * Which machine an instance was launched for, from what was recorded rather
 * than from a tag of its own (issue 30: tagging each instance after a
 * batched launch costs one CreateTags per instance). An instance carries its
 * launch batch's tag; the batch's record lists its members in launch order,
 * and member i got the instance with AmiLaunchIndex i
 * (activities/launch-batcher.ts). Instances launched before batches were
 * tagged this way carry `provisioner:machine`, which still counts.
 */
export class InstanceOwners {
  private readonly members = new Map<string, Promise<string[] | undefined>>();

  constructor(private readonly batches: Pick<LaunchBatchStore, 'members'>) {}

  /** Reading the batches of the table `tableName` (tests and the bench audit with it). */
  static ofTable(client: DynamoDBClient, tableName: string): InstanceOwners {
    return new InstanceOwners(new LaunchBatchStore(client, tableName));
  }

  /** The machine each of the model's instances was launched for, where that is known. */
  async of(model: string, instances: readonly Instance[]): Promise<Map<string, string>> {
    const owners = new Map<string, string>();
    const ids = [...new Set(instances.flatMap((i) => tagValue(i, TAG_LAUNCH_BATCH) ?? []))];
    const byBatch = new Map<string, string[] | undefined>();
    await Promise.all(ids.map(async (id) => byBatch.set(id, await this.batchMembers(model, id))));
    for (const i of instances) {
      if (!i.InstanceId) continue;
      const batch = tagValue(i, TAG_LAUNCH_BATCH);
      const member =
        batch !== undefined && i.AmiLaunchIndex !== undefined
          ? byBatch.get(batch)?.[i.AmiLaunchIndex]
          : undefined;
      const owner = member ?? tagValue(i, TAG_MACHINE);
      if (owner !== undefined) owners.set(i.InstanceId, owner);
    }
    return owners;
  }

  private batchMembers(model: string, batchId: string): Promise<string[] | undefined> {
    const key = JSON.stringify([model, batchId]);
    const held = this.members.get(key);
    if (held) return held;
    const read = this.batches.members(model, batchId);
    this.members.set(key, read);
    // only what a sent batch holds is kept: a failed or empty read asks again next time
    read.then(
      (m) => {
        if (!m) this.members.delete(key);
      },
      () => this.members.delete(key),
    );
    if (this.members.size > CACHED_BATCHES) {
      const oldest = this.members.keys().next().value;
      if (oldest !== undefined) this.members.delete(oldest);
    }
    return read;
  }
}
