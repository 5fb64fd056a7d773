/** @type {import('jest').Config} */
const tsJest = {
  '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', isolatedModules: true }],
};

module.exports = {
  // integration tests wait on real provisioning; unit tests finish far sooner
  testTimeout: 120000,
  // sweep-dependent integration files first, moto-heavy ones last (jest.sequencer.js says why)
  testSequencer: '<rootDir>/jest.sequencer.js',
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform: tsJest,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
      // no file leaves a running catch-up's window open for the next one (test/support/settled-catch-ups.ts)
      setupFilesAfterEnv: ['<rootDir>/test/support/settled-catch-ups-hook.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform: tsJest,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/integration/global-setup.ts',
      globalTeardown: '<rootDir>/test/integration/global-teardown.ts',
    },
    {
      // npm run test:faults: its own private stack, started by the suite itself
      displayName: 'faults',
      testEnvironment: 'node',
      transform: tsJest,
      testMatch: ['<rootDir>/test/faults/**/*.test.ts'],
    },
  ],
};
