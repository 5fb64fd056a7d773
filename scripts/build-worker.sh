#!/bin/sh
# The worker's build, the one the Dockerfile runs (its build stage) and the
# local stack runs for PROVISIONER_ARTIFACTS=shipped (local/shipped.ts), so the
# two cannot drift. Run it from the root of the build context (the repository
# minus .dockerignore; CDK stages exactly that in cdk.out), with node_modules
# installed there: `sh scripts/build-worker.sh OUTDIR`.
#
# Sources are transpiled file by file (no bundling), so the tree keeps its
# shape: worker/main.js finds ../workflows at run time, and Temporal's own
# bundler packs workflows/ and core/ into the workflow sandbox when the worker
# starts. The JSON files (package.json, data files) are copied beside them.
set -eu
out="${1:?usage: sh scripts/build-worker.sh OUTDIR}"
sources="$(mktemp)"
trap 'rm -f "$sources"' EXIT
find . -name '*.ts' -not -name '*.d.ts' -not -path './node_modules/*' > "$sources"
./node_modules/.bin/esbuild $(cat "$sources") --outdir="$out" --outbase=. --platform=node \
  --target=node22 --format=cjs --keep-names --sourcemap --log-level=warning
find . -name '*.json' -not -path './node_modules/*' -exec cp --parents {} "$out/" \;
test -f "$out/worker/main.js" && test -f "$out/workflows/index.js"
