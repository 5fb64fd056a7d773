import {
  ConditionalCheckFailedException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { EntityNotFoundError } from './errors';
import { releaseItems, releaseUncountedMachine } from './zone-count-items';
import { readMachines, type ZoneCountTable } from './zone-count-reads';

// The zone counts' release (ZoneCountStore.release, releaseIfDead): a machine's
// counts given back, once, whatever retries.

/**
 * Takes the machine out of the zone counts (a failover, a final error,
 * teardown): idempotent, a machine not counted anywhere is left as it is.
 */
export async function release(t: ZoneCountTable, model: string, machineId: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const m = (await readMachines(t, model, [machineId])).get(machineId);
    if (!m?.exists) throw new EntityNotFoundError(`machine ${machineId} not found`);
    const now = new Date().toISOString();
    if (!m.countedZone) {
      try {
        await t.doc.send(
          new UpdateCommand(releaseUncountedMachine(t.tableName, model, machineId, now)),
        );
        return;
      } catch (err) {
        // gone, or counted meanwhile: read again
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        if (attempt >= t.maxTries) throw err;
        continue;
      }
    }
    const zone = m.countedZone;
    const partition = m.countedPartition;
    const items = releaseItems(
      t.tableName,
      model,
      machineId,
      { zone, partition, groups: m.countedGroups ?? [] },
      now,
    );
    try {
      await t.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return;
    } catch (err) {
      if (!(err instanceof TransactionCanceledException)) throw err;
      const codes = (err.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
      // a counter already at zero (never counted there): take the machine out alone
      if (
        codes[0] === 'None' &&
        codes.slice(1).every((c) => c === 'None' || c === 'ConditionalCheckFailed')
      ) {
        const [first] = items;
        await t.doc
          .send(new TransactWriteCommand({ TransactItems: [first] }))
          .catch(() => undefined);
        return;
      }
      if (attempt >= t.maxTries) throw err;
      await t.pause(attempt);
    }
  }
}

/** Takes a Dead machine out of the zone counts; any other machine (or none) is left alone. */
export async function releaseIfDead(
  t: ZoneCountTable,
  model: string,
  machineId: string,
): Promise<void> {
  const m = (await readMachines(t, model, [machineId])).get(machineId);
  if (m?.life !== 'dead' || !m.countedZone) return;
  await release(t, model, machineId).catch((err: unknown) => {
    if (!(err instanceof EntityNotFoundError)) throw err;
  });
}
