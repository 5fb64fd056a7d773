// Integration files that wait for the sweeper run first, and the files that
// leave EC2 (moto) holding hundreds of instances run last. All files share
// one stack and one table, and the one sweeper walks every model the suite
// has made, every 5 s: each model costs its own reads and calls (a page of
// models shares one listing of the region's instances), so a walk slows as
// the suite's models accumulate, and moto answers more slowly as instances
// pile up. Late in a fresh-clone CI run a walk took minutes and moto answered
// teardown's DescribeInstances after 20 s, so the sweep- and teardown-bound
// tests meet the stack while it is young.
const Sequencer = require('@jest/test-sequencer').default;

const FIRST = [
  'sweep-reconcile.test.ts',
  'liveness.test.ts',
  'model-identity.test.ts',
  'slice.test.ts',
  'provisioning.test.ts',
  'availability-sets.test.ts',
  'teardown.test.ts',
  'machine-story.test.ts',
  'temporal-ui.test.ts',
  'containers.test.ts',
];
// aws-calls.test.ts checks every AWS call the suite made against the template's IAM: after all others
const LAST = ['fuzz.test.ts', 'bulk.test.ts', 'teardown-scale.test.ts', 'aws-calls.test.ts'];

function rank(path) {
  const first = FIRST.findIndex((name) => path.endsWith(`/${name}`));
  if (first >= 0) return first;
  const last = LAST.findIndex((name) => path.endsWith(`/${name}`));
  return last >= 0 ? FIRST.length + 1 + last : FIRST.length;
}

class SweepFirstSequencer extends Sequencer {
  sort(tests) {
    const ordered = [...super.sort(tests)];
    return ordered
      .map((test, index) => ({ test, index }))
      .sort((a, b) => rank(a.test.path) - rank(b.test.path) || a.index - b.index)
      .map(({ test }) => test);
  }
}

module.exports = SweepFirstSequencer;
