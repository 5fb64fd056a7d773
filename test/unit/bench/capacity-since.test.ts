import { capacitySince } from '../../../bench/run-size';
import type { CapacityTotals } from '../../../config/capacity-meter';

/** One call site's (or one process's) totals: read and write units, calls and failed calls by operation. */
const site = (
  readUnits: number,
  writeUnits: number,
  calls: Record<string, number>,
  failed: Record<string, number> = {},
) => ({ readUnits, writeUnits, calls, failed });

describe('capacitySince: what the processes spent between two readings', () => {
  it('subtracts before from after, summed over processes, for totals, failed and each call site', () => {
    const before: CapacityTotals[] = [
      {
        readUnits: 10,
        writeUnits: 4,
        calls: { GetItem: 10, PutItem: 4 },
        failed: { PutItem: 1 },
        byCaller: {
          'models:getModel < launch': site(10, 0, { GetItem: 10 }),
          'launch-record:write': site(0, 4, { PutItem: 4 }, { PutItem: 1 }),
        },
      },
      { readUnits: 0, writeUnits: 2, calls: { TransactWriteItems: 1 }, failed: {} },
    ];
    const after: CapacityTotals[] = [
      {
        readUnits: 13,
        writeUnits: 9,
        calls: { GetItem: 13, PutItem: 9 },
        failed: { PutItem: 3 },
        byCaller: {
          'models:getModel < launch': site(13, 0, { GetItem: 13 }),
          'launch-record:write': site(0, 9, { PutItem: 9 }, { PutItem: 3 }),
        },
      },
      { readUnits: 0.5, writeUnits: 6, calls: { TransactWriteItems: 3, Query: 1 }, failed: {} },
    ];
    expect(capacitySince(before, after)).toEqual({
      readUnits: 3.5,
      writeUnits: 9,
      calls: { GetItem: 3, PutItem: 5, TransactWriteItems: 2, Query: 1 },
      failed: { PutItem: 2 },
      byCaller: {
        'models:getModel < launch': site(3, 0, { GetItem: 3 }),
        'launch-record:write': site(0, 5, { PutItem: 5 }, { PutItem: 2 }),
      },
    });
  });

  it('leaves out call sites and counts that did not move, and failed when nothing failed', () => {
    const reading: CapacityTotals = {
      readUnits: 1,
      writeUnits: 1,
      calls: { GetItem: 1, UpdateItem: 1 },
      failed: { UpdateItem: 1 },
      byCaller: {
        'machines:machineWithView < loadMachine': site(1, 0, { GetItem: 1 }),
        'provisioning:recordRunning < recordLaunched': site(
          0,
          1,
          { UpdateItem: 1 },
          { UpdateItem: 1 },
        ),
      },
    };
    const later: CapacityTotals = {
      ...reading,
      readUnits: 2,
      calls: { GetItem: 2, UpdateItem: 1 },
      byCaller: {
        ...reading.byCaller,
        'machines:machineWithView < loadMachine': site(2, 0, { GetItem: 2 }),
      },
    };
    expect(capacitySince([reading], [later])).toEqual({
      readUnits: 1,
      writeUnits: 0,
      calls: { GetItem: 1 },
      byCaller: {
        'machines:machineWithView < loadMachine': site(1, 0, { GetItem: 1 }),
      },
    });
    // a process that started metering after the first reading counts from zero
    expect(capacitySince([], [reading])).toMatchObject({
      readUnits: 1,
      writeUnits: 1,
      failed: { UpdateItem: 1 },
    });
  });
});
