#!/usr/bin/env node
'use strict';
// The `provisioner` command: runs the TypeScript CLI in this process through
// tsx's require hook, so it works right after `npm ci` with no build step.
const path = require('node:path');

let register;
try {
  ({ register } = require('tsx/cjs/api'));
} catch {
  process.stderr.write(
    'ERROR the provisioner CLI needs its dependencies: run "npm ci" in the checkout\n',
  );
  process.exit(1);
}
register();
const { run } = require(path.join(__dirname, 'main.ts'));
run(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
