import { TEMPORAL_DYNAMIC_CONFIG_ENV, temporalDynamicConfig } from '../../../local/stack';

describe('temporalDynamicConfig', () => {
  it('passes nothing more when the environment says nothing', () => {
    expect(temporalDynamicConfig({})).toEqual([]);
    expect(temporalDynamicConfig({ [TEMPORAL_DYNAMIC_CONFIG_ENV]: '  ' })).toEqual([]);
  });

  it('passes each KEY=JSON the environment names, in order', () => {
    expect(
      temporalDynamicConfig({
        [TEMPORAL_DYNAMIC_CONFIG_ENV]:
          ' matching.numTaskqueueReadPartitions=1  matching.numTaskqueueWritePartitions=1 ',
      }),
    ).toEqual(['matching.numTaskqueueReadPartitions=1', 'matching.numTaskqueueWritePartitions=1']);
  });

  it('refuses a value that is not KEY=JSON rather than start a server without it', () => {
    expect(() =>
      temporalDynamicConfig({
        [TEMPORAL_DYNAMIC_CONFIG_ENV]: 'matching.numTaskqueueReadPartitions',
      }),
    ).toThrow(
      `${TEMPORAL_DYNAMIC_CONFIG_ENV}: "matching.numTaskqueueReadPartitions" is not KEY=JSON`,
    );
  });
});
