import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { devDependenciesReached } from '../../../local/shipped';

describe('shipped worker: no devDependency reached from its entry points', () => {
  let app = '';
  const pkg = {
    dependencies: { zod: '1', '@temporalio/worker': '1' },
    devDependencies: { ajv: '1', '@temporalio/testing': '1', jest: '1' },
  };
  beforeAll(() => {
    app = mkdtempSync(join(tmpdir(), 'worker-deps-'));
    mkdirSync(join(app, 'worker'));
    mkdirSync(join(app, 'workflows'));
    mkdirSync(join(app, 'activities'));
    writeFileSync(
      join(app, 'worker/main.js'),
      "require('node:fs'); require('path'); require('zod'); require('@temporalio/worker'); require('../activities/a');",
    );
    writeFileSync(join(app, 'activities/a.js'), "module.exports = require('ajv/dist/2020');");
    writeFileSync(join(app, 'workflows/index.js'), "require('@temporalio/testing/lib/x');");
    // a file no entry reaches (a test helper in the build context) may use what it likes
    writeFileSync(join(app, 'unreached.js'), "require('jest');");
  });
  afterAll(() => rmSync(app, { recursive: true, force: true }));

  it('names each devDependency an entry reaches, through relative imports, by package', () => {
    expect(devDependenciesReached(app, ['worker/main.js', 'workflows/index.js'], pkg)).toEqual([
      '@temporalio/testing',
      'ajv',
    ]);
  });

  it('finds none when the entries import only dependencies and builtins', () => {
    writeFileSync(join(app, 'activities/a.js'), "module.exports = require('zod');");
    expect(devDependenciesReached(app, ['worker/main.js'], pkg)).toEqual([]);
  });
});
