import { TransactionTooLargeError } from '../../../state/errors';
import { machineWriteChunks } from '../../../state/machines';
import type { MachineRecord } from '../../../state/types';
import { pendingMachine } from '../../support/machines';

const machine = (id: string): MachineRecord =>
  pendingMachine('m', id, { createdAt: '', updatedAt: '' });

const ids = (chunks: MachineRecord[][]) => chunks.map((c) => c.map((m) => m.id));

describe('machineWriteChunks', () => {
  it.each([
    ['nothing', [], 3, []],
    ['plain machines, 3 a transaction', ['0', '1', '2', '3'], 3, [['0', '1', '2'], ['3']]],
    [
      'a host never parted from its container',
      ['0', '0/lxd/0', '1', '1/lxd/0'],
      3,
      [
        ['0', '0/lxd/0'],
        ['1', '1/lxd/0'],
      ],
    ],
    [
      'hosts with containers fill a transaction exactly',
      ['0', '0/lxd/0', '1', '1/lxd/0', '2'],
      4,
      [['0', '0/lxd/0', '1', '1/lxd/0'], ['2']],
    ],
  ])('%s', (_what, given, limit, expected) => {
    expect(ids(machineWriteChunks(given.map(machine), limit))).toEqual(expected);
  });

  it('60 hosts with a container each: 99-item transactions of whole pairs', () => {
    const given = Array.from({ length: 60 }, (_, h) => [String(h), `${h}/lxd/0`]).flat();
    const chunks = machineWriteChunks(given.map(machine));
    expect(chunks.map((c) => c.length)).toEqual([98, 22]);
    for (const chunk of chunks) {
      const inChunk = new Set(chunk.map((m) => m.id));
      for (const m of chunk) expect(inChunk.has(m.id.split('/')[0]!)).toBe(true);
    }
  });

  it('refuses a host with more containers than a transaction holds', () => {
    expect(() => machineWriteChunks(['0', '0/lxd/0', '0/lxd/1'].map(machine), 2)).toThrow(
      new TransactionTooLargeError(
        'machine 0 and its containers need 3 writes in one transaction, more than 2',
      ),
    );
  });
});
