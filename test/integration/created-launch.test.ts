import { DeleteCommand, DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createActivities } from '../../activities';
import { runningCatchUpsSettled } from '../../activities/running-catch-up';
import { provisioningTuning } from '../../config/env';
import { emptyTotals, meterCapacity } from '../../config/capacity-meter';
import { regionalEc2 } from '../../ec2/regional';
import { EntityConflictError } from '../../state/errors';
import { createMachine, guardModelAndApp } from '../../state/writes';
import { machineSk, modelPk, MODEL_SK } from '../../state/keys';
import { ProvisioningStore } from '../../state/provisioning';
import { Repository } from '../../state/repository';
import type { CreatedMachine } from '../../workflows/definitions';
import { pendingMachine, seedModel } from './fixtures';
import { dynamoClientFor, ec2ClientFor, loadTestStack, privateTable } from './stack';

/**
 * A machine's first step from what its creating request wrote (issue 26,
 * MachineWorkflowInput.created), through the loadMachine activity on the
 * stack's DynamoDB and EC2 catalogue: planned and claimed without reading
 * the machine or the model, and only when the claim finds the machine
 * exactly so; a machine that is not (its model destroyed and re-created by
 * name, a unit placed on it, Dead) is read and planned as before.
 */
const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const doc = DynamoDBDocumentClient.from(ddb);
// as the worker's: a socket reset as it was reused is tried again (it failed a CI run once)
const ec2 = ec2ClientFor(stack, stack.ec2Endpoint, 3);
// its own table: the sweeper would launch the machines written here (stack.ts)
const table = privateTable(ddb, 'created-launch');
const repo = new Repository(ddb, table.tableName);
// the activities' client is metered: what the step reads and writes
const metered = dynamoClientFor(stack);
const totals = emptyTotals();
meterCapacity(metered, totals);
// a fault the activities' next transaction (the zone claim's write) meets instead of DynamoDB
let failNextTransaction: Error | undefined;
metered.middlewareStack.add(
  (next, context) => async (args) => {
    const fault = failNextTransaction;
    if (fault && context.commandName === 'TransactWriteItemsCommand') {
      failNextTransaction = undefined;
      throw fault;
    }
    return next(args);
  },
  { step: 'initialize', name: 'createdLaunchFault' },
);
const activities = createActivities({
  repo: new Repository(metered, table.tableName),
  store: new ProvisioningStore(metered, table.tableName),
  ec2ForRegion: regionalEc2(() => ec2, 0),
  defaultRegion: stack.region,
  tuning: provisioningTuning({}),
  deployment: 'created-launch-test',
  taskQueue: 'unused',
});

beforeAll(() => table.create());

afterAll(async () => {
  // a catch-up window still open writes to the table: it ends first (a log after the file's end fails the run)
  await runningCatchUpsSettled();
  await table.drop();
  ec2.destroy();
  ddb.destroy();
  metered.destroy();
});

/** A model and one new machine in it, written as add-machine writes them (with the model's uid). */
async function created(
  applications: string[] = [],
): Promise<{ model: string; id: string; uid: string; hint: CreatedMachine }> {
  const model = await seedModel(repo, 'created', { region: stack.region });
  const { uid } = await repo.getModel(model);
  const [id] = await repo.allocateMachineIds(model, 1);
  await repo.putNewMachines([
    pendingMachine(model, id!, { applications, constraints: 'mem=2G', modelUid: uid }),
  ]);
  const hint: CreatedMachine = {
    modelUid: uid,
    region: stack.region,
    availabilitySets: false,
    base: 'ubuntu@24.04',
    constraints: 'mem=2G',
    applications,
  };
  return { model, id: id!, uid, hint };
}

/** Conditional writes refused (a transaction cancelled) since `before`. */
/** Changes the machine's item behind the API's back (what another request or worker did meanwhile). */
async function setOnMachine(
  model: string,
  id: string,
  expression: string,
  values: Record<string, unknown>,
  names?: Record<string, string>,
): Promise<void> {
  await doc.send(
    new UpdateCommand({
      TableName: table.tableName,
      Key: { pk: modelPk(model), sk: machineSk(id) },
      UpdateExpression: expression,
      ...(names ? { ExpressionAttributeNames: names } : {}),
      ExpressionAttributeValues: values,
    }),
  );
}

/** The machine's first step, given what add-machine wrote. */
const firstStep = (
  model: string,
  id: string,
  hint: Parameters<typeof activities.loadMachine>[0]['created'],
) => activities.loadMachine({ model, machineId: id, prepare: true, created: hint });

/** The bare machines' zone counts of a model. */
const zoneCounts = (model: string) =>
  new ProvisioningStore(ddb, table.tableName).zones.counts(model, '');

/** How many of a model's bare machines are counted in any zone. */
const countedAnywhere = async (model: string): Promise<number> =>
  Object.values(await zoneCounts(model)).reduce((a, b) => a + b, 0);

function refusedSince(before: Record<string, number>): number {
  return (totals.failed.TransactWriteItems ?? 0) - (before.TransactWriteItems ?? 0);
}

/** Reads (GetItem, BatchGetItem, Query) the step made. */
function readsSince(before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const op of ['GetItem', 'BatchGetItem', 'Query']) {
    const n = (totals.calls[op] ?? 0) - (before[op] ?? 0);
    if (n > 0) out[op] = n;
  }
  return out;
}

it('plans and claims from the creation with no read of the machine or the model', async () => {
  const { model, id, hint } = await created(['web']);
  // the catalogue and images are cached per region: warm them, so only this step is counted
  await activities.loadMachine({ model, machineId: id, prepare: true, created: hint });
  const second = await created(['web']);
  const before = { ...totals.calls };
  const answer = await activities.loadMachine({
    model: second.model,
    machineId: second.id,
    prepare: true,
    created: second.hint,
  });
  expect(answer).toMatchObject({
    life: 'alive',
    status: 'pending',
    applications: ['web'],
    manual: false,
    container: false,
    prepared: { plan: { region: stack.region, applications: ['web'] }, fromCreation: true },
  });
  const zone = answer?.prepared?.zone;
  expect(typeof zone).toBe('string');
  // the group's counter is read (BatchGetItem of the counter only); the machine and model never
  expect(readsSince(before)).toEqual({ BatchGetItem: 1 });
  const machine = await repo.getMachine(second.model, second.id);
  expect(machine).toMatchObject({
    status: 'allocating',
    modelUid: second.uid,
    message: `starting in zone "${zone}" (attempt 1 of ${provisioningTuning({}).startAttempts})`,
  });
  expect(
    await new ProvisioningStore(ddb, table.tableName).zones.counts(second.model, 'web'),
  ).toEqual({ [zone!]: 1 });
});

it('refuses to write machines naming a uid the model no longer has (destroyed and re-created meanwhile)', async () => {
  const model = await seedModel(repo, 'recreated', { region: stack.region });
  const [id] = await repo.allocateMachineIds(model, 1);
  const write = repo.putNewMachines([pendingMachine(model, id!, { modelUid: 'an-older-model' })]);
  await expect(write).rejects.toThrow(EntityConflictError);
  await expect(write).rejects.toThrow(`model "${model}" is being destroyed`);
  // nothing half-written
  await expect(repo.getMachine(model, id!)).rejects.toThrow(`machine ${id} not found`);
});

// the services that write so are tested in creation-uid.test.ts
it('refuses a transaction of machines naming a uid the model no longer has', async () => {
  const model = await seedModel(repo, 'recreated-units', { region: stack.region });
  const { uid } = await repo.getModel(model);
  const [stale, fresh] = await repo.allocateMachineIds(model, 2);
  const write = (id: string, modelUid: string) => {
    // as deploy writes its machines (service/deploy.ts) and add-unit its bulk units (unit-writes.ts)
    const tx = repo.transaction();
    guardModelAndApp(tx, model, [], modelUid);
    createMachine(tx, pendingMachine(model, id, { applications: ['db'], modelUid }));
    return repo.commit(tx);
  };
  const refused = write(stale!, 'an-older-model');
  await expect(refused).rejects.toThrow(EntityConflictError);
  await expect(refused).rejects.toThrow(`model "${model}" is being destroyed`);
  await expect(repo.getMachine(model, stale!)).rejects.toThrow(`machine ${stale} not found`);
  // the model's own uid: written
  await write(fresh!, uid);
  expect((await repo.getMachine(model, fresh!)).modelUid).toBe(uid);
});

it('reads the machine and its model when the key holds another creation (the model re-created by name)', async () => {
  const { model, id, hint } = await created();
  // destroy → re-create: the same model name and machine id, another model uid and region's mode
  await doc.send(
    new DeleteCommand({
      TableName: table.tableName,
      Key: { pk: modelPk(model), sk: machineSk(id) },
    }),
  );
  await doc.send(
    new UpdateCommand({
      TableName: table.tableName,
      Key: { pk: modelPk(model), sk: MODEL_SK },
      UpdateExpression: 'SET #uid = :uid',
      ExpressionAttributeNames: { '#uid': 'uid' },
      ExpressionAttributeValues: { ':uid': 'the-new-model' },
    }),
  );
  await repo.putNewMachines([
    pendingMachine(model, id, { constraints: 'mem=2G', modelUid: 'the-new-model' }),
  ]);
  const before = { ...totals.calls };
  const answer = await firstStep(model, id, hint);
  // claimed once, from a read: planned with the new model's uid, never the old one's
  expect(answer?.prepared?.plan?.modelUid).toBe('the-new-model');
  expect(answer?.prepared?.fromCreation).toBeUndefined();
  expect(readsSince(before).GetItem).toBeGreaterThanOrEqual(2); // the machine, then its model
  const machine = await repo.getMachine(model, id);
  expect(machine).toMatchObject({ status: 'allocating', modelUid: 'the-new-model' });
  expect(await zoneCounts(model)).toEqual({
    [answer!.prepared!.zone!]: 1,
  });
});

it('reads the machine when a unit was placed on it meanwhile: the plan names its applications as they are', async () => {
  const { model, id, hint } = await created();
  await setOnMachine(model, id, 'SET applications = :a, principals = :p, version = :v', {
    ':a': ['db'],
    ':p': ['db/0'],
    ':v': 1,
  });
  const answer = await firstStep(model, id, hint);
  expect(answer).toMatchObject({ applications: ['db'], units: ['db/0'] });
  expect(answer?.prepared?.plan?.applications).toEqual(['db']);
  const zone = answer!.prepared!.zone!;
  const counts = new ProvisioningStore(ddb, table.tableName).zones;
  // counted once, in the group it is in now, not in the bare machines' group
  expect(await counts.counts(model, 'db')).toEqual({ [zone]: 1 });
  expect(Object.values(await counts.counts(model, '')).reduce((a, b) => a + b, 0)).toBe(0);
});

it('claims nothing for a machine Dead before its first step, and answers it Dead', async () => {
  const { model, id, hint } = await created();
  await setOnMachine(model, id, 'SET life = :dead, version = :v', { ':dead': 'dead', ':v': 1 });
  const answer = await firstStep(model, id, hint);
  expect(answer).toMatchObject({ life: 'dead', status: 'pending' });
  expect(answer?.prepared).toBeUndefined();
  const machine = await repo.getMachine(model, id);
  expect(machine.status).toBe('pending');
  expect(await countedAnywhere(model)).toBe(0);
});

it('answers null for a machine removed before its first step, writing nothing', async () => {
  const { model, id, hint } = await created();
  await doc.send(
    new DeleteCommand({
      TableName: table.tableName,
      Key: { pk: modelPk(model), sk: machineSk(id) },
    }),
  );
  const answer = await firstStep(model, id, hint);
  expect(answer).toBeNull();
  await expect(repo.getMachine(model, id)).rejects.toThrow(`machine ${id} not found`);
});

it('reads the machine when its constraints changed since the request (a retried request after a model constraint change)', async () => {
  // the machines were written with mem=2G; the retried request's decision says cores=8
  const { model, id, hint } = await created();
  const before = { ...totals.calls };
  const refusedBefore = { ...totals.failed };
  const answer = await activities.loadMachine({
    model,
    machineId: id,
    prepare: true,
    created: { ...hint, constraints: 'cores=8' },
  });
  // the claim planned from the request was refused by its condition, and the machine read
  expect(refusedSince(refusedBefore)).toBe(1);
  expect(readsSince(before).GetItem).toBeGreaterThanOrEqual(1);
  // planned from the machine as it is, never from the request's constraints
  expect(answer).toMatchObject({ life: 'alive', status: 'pending', constraints: 'mem=2G' });
  expect(answer?.prepared?.fromCreation).toBeUndefined();
  const plan = answer!.prepared!.plan!;
  expect(plan.hardware.cores).toBeLessThan(8);
  expect(plan.instanceType).toBe(
    (await activities.planLaunch({ model, machineId: id })).instanceType,
  );
  const machine = await repo.getMachine(model, id);
  expect(machine).toMatchObject({ status: 'allocating', constraints: 'mem=2G' });
  expect(await zoneCounts(model)).toEqual({
    [answer!.prepared!.zone!]: 1,
  });
});

it('claims nothing for a machine in error (its zone released, otherwise as created): answered in error', async () => {
  const { model, id, hint } = await created();
  await setOnMachine(
    model,
    id,
    'SET #status = :error, #message = :m',
    { ':error': 'error', ':m': 'no capacity anywhere' },
    { '#status': 'status', '#message': 'message' },
  );
  const refusedBefore = { ...totals.failed };
  const answer = await firstStep(model, id, hint);
  // the claim from the creation was refused; read as before: a machine in error is not
  // provisioned until retried
  expect(refusedSince(refusedBefore)).toBe(1);
  expect(answer).toMatchObject({ life: 'alive', status: 'error', message: 'no capacity anywhere' });
  expect(answer?.prepared).toBeUndefined();
  const machine = await repo.getMachine(model, id);
  expect(machine).toMatchObject({ status: 'error', message: 'no capacity anywhere' });
  expect(await countedAnywhere(model)).toBe(0);
});

it('answers a dying machine dying (read), not alive as its creation said', async () => {
  const { model, id, hint } = await created();
  await setOnMachine(model, id, 'SET life = :dying, version = :v', { ':dying': 'dying', ':v': 1 });
  const before = { ...totals.calls };
  const refusedBefore = { ...totals.failed };
  const answer = await firstStep(model, id, hint);
  expect(refusedSince(refusedBefore)).toBe(1);
  expect(readsSince(before).GetItem).toBeGreaterThanOrEqual(1);
  expect(answer?.life).toBe('dying');
});

it('rethrows a transient failure of the claim from the creation: no read, no fallback; the retry claims from it', async () => {
  const { model, id, hint } = await created();
  const throttled = Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ThrottlingException',
  });
  failNextTransaction = throttled;
  const before = { ...totals.calls };
  await expect(
    activities.loadMachine({ model, machineId: id, prepare: true, created: hint }),
  ).rejects.toBe(throttled);
  expect(failNextTransaction).toBeUndefined();
  // not taken for a stale view: neither the machine nor its model was read, nothing claimed
  expect(readsSince(before)).toEqual({ BatchGetItem: 1 });
  expect(await repo.getMachine(model, id)).toMatchObject({ status: 'pending', message: '' });
  const counts = new ProvisioningStore(ddb, table.tableName).zones;
  expect(Object.values(await counts.counts(model, '')).reduce((a, b) => a + b, 0)).toBe(0);
  // the step's retry: from the creation again, still no read of the machine or the model
  const retried = { ...totals.calls };
  const answer = await firstStep(model, id, hint);
  expect(readsSince(retried)).toEqual({ BatchGetItem: 1 });
  expect(answer?.prepared?.fromCreation).toBe(true);
  const zone = answer!.prepared!.zone!;
  expect(await repo.getMachine(model, id)).toMatchObject({ status: 'allocating' });
  expect(await counts.counts(model, '')).toEqual({ [zone]: 1 });
});
