import type { ServiceContext } from '../../service/context';
import { deploy } from '../../service/applications';
import { addMachines } from '../../service/machines';
import { addUnits } from '../../service/units';
import { ContendedError, EntityConflictError } from '../../state/errors';
import { machineKey } from '../../state/items';
import { Repository, type Transaction } from '../../state/repository';
import { seedModel } from './fixtures';
import { dynamoClientFor, loadTestStack, privateTable } from './stack';

/**
 * Issue 23 item 7: retries and races that wrote twice or half. The services
 * run in-process against the stack's DynamoDB Local, in a table of this
 * file's own (the sweeper would launch what is written here), with the
 * workflows they start recorded rather than started.
 */

const stack = loadTestStack();
const ddb = dynamoClientFor(stack);
const table = privateTable(ddb, 'retried-writes');

beforeAll(() => table.create());
afterAll(async () => {
  await table.drop();
  ddb.destroy();
});

/**
 * A request's steps as functions/http.ts keeps them for one Idempotency-Key:
 * a retry of a request that was cut off gets the memo the first one left.
 */
function idempotencyMemo() {
  const memo: Record<string, unknown> = {};
  const step = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    if (Object.hasOwn(memo, name)) return memo[name] as T;
    const value = await run();
    memo[name] = value;
    return value;
  };
  return { memo, step };
}

function context(repo: Repository, step?: ServiceContext['step']): ServiceContext {
  return {
    repo,
    workflows: {
      start: () => Promise.resolve(),
      startMany: () => Promise.resolve(),
      signal: () => Promise.resolve(),
      ensureSweep: () => Promise.resolve(),
    },
    defaultRegion: stack.region,
    now: () => new Date(),
    log: { warn: () => undefined, info: () => undefined, error: () => undefined },
    ...(step ? { step } : {}),
  };
}

async function machineIds(repo: Repository, model: string): Promise<string[]> {
  return (await repo.listMachines(model)).map((m) => m.id).sort();
}

describe('add-machine with lxd, retried with its Idempotency-Key (7a)', () => {
  const repo = new Repository(ddb, table.tableName);

  it('`lxd`: a retry after the request was cut off records no second host or container', async () => {
    const model = await seedModel(repo, 'lxdretry');
    const { step } = idempotencyMemo();
    const first = await addMachines(context(repo, step), model, { placement: 'lxd', count: 2 });
    expect(first).toEqual([{ id: '0/lxd/0' }, { id: '1/lxd/0' }]);
    // the answer was lost: the client sends the request again with its key
    const again = await addMachines(context(repo, step), model, { placement: 'lxd', count: 2 });
    expect(again).toEqual(first);
    expect(await machineIds(repo, model)).toEqual(['0', '0/lxd/0', '1', '1/lxd/0']);
    expect((await repo.getMachine(model, '0')).containers).toEqual(['0/lxd/0']);
    // a new request (another key) gets the next host
    expect(await addMachines(context(repo), model, { placement: 'lxd' })).toEqual([
      { id: '2/lxd/0' },
    ]);
  });

  it('`lxd:N`: a retry records no second container, and its host lists it once', async () => {
    const model = await seedModel(repo, 'lxdnretry');
    await addMachines(context(repo), model, {});
    const { step } = idempotencyMemo();
    const first = await addMachines(context(repo, step), model, { placement: 'lxd:0' });
    expect(first).toEqual([{ id: '0/lxd/0' }]);
    const again = await addMachines(context(repo, step), model, { placement: 'lxd:0' });
    expect(again).toEqual(first);
    expect(await machineIds(repo, model)).toEqual(['0', '0/lxd/0']);
    expect((await repo.getMachine(model, '0')).containers).toEqual(['0/lxd/0']);
    // a new request gets the next container
    expect(await addMachines(context(repo), model, { placement: 'lxd:0' })).toEqual([
      { id: '0/lxd/1' },
    ]);
  });

  it('a retry after a cut-off between reserving ids and writing them writes those ids', async () => {
    const model = await seedModel(repo, 'lxdhalf');
    const { memo, step } = idempotencyMemo();
    // the first request reserved its hosts, then died before writing them
    memo.machineIds = await repo.allocateMachineIds(model, 1);
    expect(await addMachines(context(repo, step), model, { placement: 'lxd' })).toEqual([
      { id: '0/lxd/0' },
    ]);
    expect(await machineIds(repo, model)).toEqual(['0', '0/lxd/0']);
  });

  it('a retry after a cut-off between the write and remembering it answers as the first', async () => {
    const model = await seedModel(repo, 'lxdwritten');
    const { memo, step } = idempotencyMemo();
    await addMachines(context(repo, step), model, { placement: 'lxd', count: 2 });
    // as if the process died right after the transaction committed
    for (const name of Object.keys(memo)) if (name.startsWith('machines-')) delete memo[name];
    expect(await addMachines(context(repo, step), model, { placement: 'lxd', count: 2 })).toEqual([
      { id: '0/lxd/0' },
      { id: '1/lxd/0' },
    ]);
    expect(await machineIds(repo, model)).toEqual(['0', '0/lxd/0', '1', '1/lxd/0']);
  });
});

/** A repository whose model goes Dying (a concurrent destroy-model) once its first machine transaction commits. */
class DestroyedAfterFirstWrite extends Repository {
  model = '';
  commits = 0;
  override async commit(tx: Transaction): Promise<void> {
    await super.commit(tx);
    const writesMachines = tx.items.some((i) => i.Put?.Item?.type === 'machine');
    if (writesMachines && ++this.commits === 1) await this.markModelDying(this.model);
  }
}

describe('add-machine lxd -n 60 racing destroy-model (7b)', () => {
  const repo = new DestroyedAfterFirstWrite(ddb, table.tableName);

  it('never writes a host without the container it lists', async () => {
    const model = await seedModel(repo, 'lxdsplit');
    repo.model = model;
    // 120 machines: more than one transaction holds
    await expect(
      addMachines(context(repo), model, { placement: 'lxd', count: 60 }),
    ).rejects.toThrow(new EntityConflictError(`model "${model}" is being destroyed`));
    expect(repo.commits).toBe(1);
    const machines = await repo.listMachines(model);
    const ids = new Set(machines.map((m) => m.id));
    const hosts = machines.filter((m) => !m.id.includes('/'));
    expect(hosts.length).toBeGreaterThan(0);
    // every host written has its container, and every container its host
    for (const host of hosts) {
      expect(host.containers).toEqual([`${host.id}/lxd/0`]);
      expect(ids.has(`${host.id}/lxd/0`)).toBe(true);
    }
    expect(machines).toHaveLength(hosts.length * 2);
  });
});

/** A repository that runs `before` ahead of its `at`-th transaction writing a unit (1-based): a race, placed. */
class RaceBeforeUnitWrite extends Repository {
  at = 0;
  before: () => Promise<void> = () => Promise.resolve();
  unitWrites = 0;
  override async commit(tx: Transaction): Promise<void> {
    if (tx.items.some((i) => i.Put?.Item?.type === 'unit') && ++this.unitWrites === this.at)
      await this.before();
    return super.commit(tx);
  }
}

describe('add-unit with directed and bulk units, a directed one losing a race (7c)', () => {
  const repo = new RaceBeforeUnitWrite(ddb, table.tableName);

  /** destroy-machine's first write, as a concurrent request makes it. */
  async function goesDying(model: string, id: string): Promise<void> {
    const m = await repo.getMachine(model, id);
    const tx = repo.transaction();
    tx.update(machineKey(model, id), 'SET life = :dying, version = :next', {
      condition: 'version = :v',
      values: { ':dying': 'dying', ':v': m.version ?? 0, ':next': (m.version ?? 0) + 1 },
    });
    await repo.commit(tx);
  }

  async function setUp(prefix: string): Promise<string> {
    const model = await seedModel(repo, prefix);
    repo.at = 0;
    await addMachines(context(repo), model, { count: 2 });
    await deploy(context(repo), model, { name: 'web', base: 'ubuntu@24.04', numUnits: 0 });
    repo.unitWrites = 0;
    return model;
  }

  it('answers 409 with nothing recorded when the machine of its first directed unit goes meanwhile', async () => {
    const model = await setUp('dirrace');
    repo.at = 1;
    repo.before = () => goesDying(model, '0');
    await expect(addUnits(context(repo), model, 'web', 5, ['0'])).rejects.toThrow(
      new EntityConflictError('machine 0 is being destroyed'),
    );
    const contents = await repo.loadModel(model);
    expect(contents.units).toEqual([]);
    // nothing but the two machines added first
    expect(contents.machines.map((m) => m.id).sort()).toEqual(['0', '1']);
  });

  it('takes back the directed unit written before another directed one is refused', async () => {
    const model = await setUp('dirrace2');
    repo.at = 2;
    repo.before = () => goesDying(model, '1');
    await expect(addUnits(context(repo), model, 'web', 5, ['0', '1'])).rejects.toThrow(
      new EntityConflictError('machine 1 is being destroyed'),
    );
    const contents = await repo.loadModel(model);
    expect(contents.units).toEqual([]);
    expect(contents.machines.map((m) => m.id).sort()).toEqual(['0', '1']);
    // machine 0 is as it was: alive, with no unit
    expect(contents.machines.find((m) => m.id === '0')).toEqual(
      expect.objectContaining({ life: 'alive', principals: [], applications: [] }),
    );
  });

  it('takes back a unit in a new container on a new host, the host going Dying with it', async () => {
    const model = await setUp('dirrace3');
    repo.at = 2;
    repo.before = () => goesDying(model, '1');
    await expect(addUnits(context(repo), model, 'web', 2, ['lxd', '1'])).rejects.toThrow(
      new EntityConflictError('machine 1 is being destroyed'),
    );
    const contents = await repo.loadModel(model);
    expect(contents.units).toEqual([]);
    const byId = new Map(contents.machines.map((m) => [m.id, m]));
    expect(byId.get('2/lxd/0')).toEqual(expect.objectContaining({ life: 'dead', principals: [] }));
    expect(byId.get('2')).toEqual(
      expect.objectContaining({ life: 'dying', containers: ['2/lxd/0'] }),
    );
  });

  it('writes them all when the directed unit wins the race', async () => {
    const model = await setUp('dirwins');
    repo.at = 2; // after the directed unit is written, its machine is asked to go
    repo.before = () => goesDying(model, '0');
    const placed = await addUnits(context(repo), model, 'web', 5, ['0']);
    expect(repo.unitWrites).toBe(2);
    expect(placed.map((u) => u.name)).toEqual(['web/0', 'web/1', 'web/2', 'web/3', 'web/4']);
    expect(placed[0]).toEqual({ name: 'web/0', machine: '0' });
    expect((await repo.loadModel(model)).units).toHaveLength(5);
  });
});

/** A repository whose `at`-th transaction writing units (1-based) gives up under contention. */
class ContendedAtUnitWrite extends Repository {
  at = 0;
  unitWrites = 0;
  override async commit(tx: Transaction): Promise<void> {
    if (tx.items.some((i) => i.Put?.Item?.type === 'unit') && ++this.unitWrites === this.at)
      throw new ContendedError('too many concurrent changes; try again');
    return super.commit(tx);
  }
}

describe('add-unit giving up under contention after a bulk chunk (review E)', () => {
  const repo = new ContendedAtUnitWrite(ddb, table.tableName);

  it('keeps the directed unit with the committed chunk, and the retry with its key completes', async () => {
    const model = await seedModel(repo, 'contended');
    await addMachines(context(repo), model, { count: 1 });
    await deploy(context(repo), model, { name: 'web', base: 'ubuntu@24.04', numUnits: 0 });
    const { step } = idempotencyMemo();
    // the directed unit, then the first bulk chunk commit; the second chunk gives up
    repo.unitWrites = 0;
    repo.at = 3;
    await expect(addUnits(context(repo, step), model, 'web', 60, ['0'])).rejects.toThrow(
      ContendedError,
    );
    const cut = await repo.loadModel(model);
    // not taken back as if refused: web/0 stays beside the chunk written
    expect(cut.units.map((u) => u.name)).toContain('web/0');
    expect(cut.units.find((u) => u.name === 'web/0')?.machine).toBe('0');
    expect(cut.units.length).toBeGreaterThan(1);
    expect(cut.units.length).toBeLessThan(60);
    repo.at = 0;
    const placed = await addUnits(context(repo, step), model, 'web', 60, ['0']);
    expect(placed).toHaveLength(60);
    expect(placed[0]).toEqual({ name: 'web/0', machine: '0' });
    const units = (await repo.loadModel(model)).units.map((u) => u.name);
    expect(new Set(units).size).toBe(60);
    expect(units).toHaveLength(60);
  });
});
