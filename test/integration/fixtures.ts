import { randomUUID } from 'node:crypto';
import type { Repository } from '../../state/repository';
import type { ModelRecord } from '../../state/types';
import { uniqueName } from './api-client';

/**
 * Entities written straight into a table, as the API would write them, for
 * tests of the state layer and of workflows started by hand. Each takes the
 * fields a test cares about; the rest are the API's defaults.
 */

/** An alive model named `<prefix>-…` (unique), with its id made now. */
export async function seedModel(
  repo: Repository,
  prefix: string,
  fields: Partial<ModelRecord> = {},
): Promise<string> {
  const name = uniqueName(prefix);
  await repo.createModel({
    name,
    uid: randomUUID(),
    availabilitySets: false,
    reprovisionLost: false,
    region: 'us-east-1',
    constraints: '',
    harvestMode: 'destroyed',
    life: 'alive',
    createdAt: new Date().toISOString(),
    ...fields,
  });
  return name;
}

// kept here for the tests that import it with the other fixtures
export { pendingMachine } from '../support/machines';
