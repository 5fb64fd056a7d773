import {
  createdFor,
  createdForChunk,
  type CreatedMachine,
} from '../../../temporal/created-machine';

const REQUEST: CreatedMachine = {
  modelUid: 'uid-1',
  region: 'us-east-1',
  availabilitySets: false,
  base: 'ubuntu@24.04',
  constraints: '',
  applications: ['web'],
  principalsOf: { '0': ['web/0'], '1': ['web/1'], '2': ['web/2'] },
};

describe("a request's creation handed to its machines", () => {
  it('gives each machine its own units and never the map', () => {
    const { principalsOf: _map, ...shared } = REQUEST;
    expect(createdFor(REQUEST, '1')).toEqual({ ...shared, principals: ['web/1'] });
    expect(createdFor(REQUEST, '7')).toEqual(shared);
    // a creation without units (add-machine) is handed as it is
    expect(createdFor(shared, '1')).toBe(shared);
  });

  it("gives each of the bulk starter's chunks only its machines' units", () => {
    expect(createdForChunk(REQUEST, ['1', '2', '9']).principalsOf).toEqual({
      '1': ['web/1'],
      '2': ['web/2'],
    });
    const { principalsOf: _map, ...shared } = REQUEST;
    expect(createdForChunk(shared, ['1'])).toBe(shared);
  });
});
