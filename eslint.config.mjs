import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importPlugin from 'eslint-plugin-import';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);

const NO_WORKFLOWS = {
  regex: '(^|/)\\.\\./workflows(/|$)',
  message: 'Import shared names from temporal/, not from workflows/.',
};

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'cdk.out/',
      '.provisioner/',
      'coverage/',
      'dist/',
      '*.js',
      '*.mjs',
      'cli/bin.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { import: importPlugin },
    settings: { 'import/resolver': { node: { extensions: ['.ts', '.js'] } } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      // Skips `import type` edges; `npm run lint:cycles` (dpdm) checks those too.
      'import/no-cycle': 'error',
    },
  },
  {
    // ec2/ owns every EC2 call the worker and the Lambdas make (client construction, pacing,
    // error classification, the catalogue); local/ emulates EC2 and tests drive it directly.
    // A rule of its own (not no-restricted-imports), so the folder rules below do not replace it.
    files: ['**/*.ts'],
    ignores: ['ec2/**', 'local/**', 'test/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@aws-sdk/client-ec2',
              message: 'EC2 calls go through ec2/ (docs/architecture.md).',
            },
          ],
        },
      ],
    },
  },
  {
    // Workflow code is replayed deterministically inside Temporal's sandbox.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Node builtins are not allowed in workflow code.',
          })),
          patterns: [
            {
              group: [
                '@aws-sdk/*',
                '@temporalio/client',
                '@temporalio/worker',
                '@temporalio/activity',
              ],
              message: 'Workflows import only core/, activity types and @temporalio/workflow.',
            },
            {
              regex: '(^|/)temporal/[^/]*-client$',
              message: 'Temporal client helpers are not workflow code.',
            },
          ],
        },
      ],
    },
  },
  {
    // The domain core is pure: no I/O, no SDKs.
    files: ['core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'core/ is pure: no Node builtins.',
          })),
          patterns: [{ regex: '^(?!\\./)', message: 'core/ imports nothing outside itself.' }],
        },
      ],
    },
  },
  {
    // Names shared with the workflows (failure types, search attributes, workflow types and
    // ids, signals' payloads) live in temporal/; nothing outside the worker's bundle reaches
    // into workflows/.
    files: ['activities/**/*.ts', 'functions/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [NO_WORKFLOWS] }],
    },
  },
  // The layers import downwards only (docs/architecture.md): functions/ → service/ → state/ →
  // core/. A later block replaces an earlier one's options for the same rule, so each layer's
  // block repeats the workflows/ pattern.
  {
    // service/ knows nothing of HTTP (functions/) or of the worker (activities/): the views it
    // answers with are service/views.ts, the Temporal client helpers temporal/, the tag names
    // core/tags.ts; functions/context.ts wires the worker's EC2 readers in.
    files: ['service/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NO_WORKFLOWS,
            {
              regex: '(^|/)\\.\\./(functions|activities|worker|local|cli|bench|infra)(/|$)',
              message:
                'service/ imports only service/, state/, core/, temporal/ and config/ (docs/architecture.md).',
            },
          ],
        },
      ],
    },
  },
  {
    // state/ is the table: it knows no service, handler, activity or workflow.
    files: ['state/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NO_WORKFLOWS,
            {
              regex:
                '(^|/)\\.\\./(service|functions|activities|temporal|worker|local|cli|bench|infra)(/|$)',
              message: 'state/ imports only state/, core/ and config/ (docs/architecture.md).',
            },
          ],
        },
      ],
    },
  },
  {
    // temporal/ is imported by workflow code too: deterministic, no Node builtins, no clients.
    files: ['temporal/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'temporal/ is bundled into workflow code: no Node builtins.',
          })),
          patterns: [
            {
              regex: '^(?!\\./|\\.\\./core(/|$)|@temporalio/common$)',
              message: 'temporal/ imports only itself, core/ and @temporalio/common.',
            },
          ],
        },
      ],
    },
  },
  {
    // Temporal client helpers (the API and the worker start workflows with them): never bundled
    // into workflow code (the workflows' own rule refuses @temporalio/client and these files).
    files: ['temporal/*-client.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'temporal/ takes no Node builtins.',
          })),
          patterns: [
            {
              regex: '^(?!\\./|\\.\\./core(/|$)|@temporalio/(common|client)$)',
              message:
                'A temporal/ client helper imports only temporal/, core/ and @temporalio/client.',
            },
          ],
        },
      ],
    },
  },
  // The CLI is a client of the HTTPS API like any other: it imports no server code.
  ...[
    ['cli/*.ts', '^\\.\\./'],
    ['cli/*/*.ts', '^\\.\\./\\.\\./'],
  ].map(([files, regex]) => ({
    files: [files],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex, message: 'cli/ is an API client: it imports no server code.' }] },
      ],
    },
  })),
  {
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/unbound-method': 'off',
      // tests read JSON bodies and assert on them; expect() checks the shape
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
);
