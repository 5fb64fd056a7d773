import { capacityNotes, capacitySince } from '../../../bench/run-size';
import {
  STATEMENT_FALLBACK,
  STATEMENT_REFUSED,
  type CapacityTotals,
} from '../../../config/capacity-meter';

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

describe('capacityNotes: what the DynamoDB figures need said beside them', () => {
  it('says the units of statements are estimated, and counts the statements written again alone', () => {
    expect(capacityNotes(300, { readUnits: 1, writeUnits: 2, calls: { UpdateItem: 2 } })).toEqual(
      [],
    );
    const estimate =
      "N=300: DynamoDB Local reports no capacity for BatchExecuteStatement; its WCU are the meter's " +
      'estimate (1 per statement written, +1 per index key it sets or removes; items under 1 KB)';
    expect(
      capacityNotes(300, {
        readUnits: 0,
        writeUnits: 30,
        calls: { BatchExecuteStatement: 2 },
        failed: { [STATEMENT_REFUSED]: 4 },
      }),
    ).toEqual([estimate]);
    expect(
      capacityNotes(300, {
        readUnits: 0,
        writeUnits: 30,
        calls: { BatchExecuteStatement: 2, UpdateItem: 3 },
        failed: { [STATEMENT_REFUSED]: 4, [STATEMENT_FALLBACK]: 3 },
      }),
    ).toEqual([
      estimate,
      'N=300: 3 statements of BatchExecuteStatement were refused for another reason than their ' +
        'condition and written again alone (the worker logged their codes)',
    ]);
  });
});
