// Integration files that wait for the per-model sweep Schedules run first: every
// model the suite creates adds a Schedule firing every 5 s to the shared Temporal
// dev server, and by the end of the suite its scheduler falls behind (schedules
// miss their catch-up window, describing one times out). Issue 16's single
// sweeper removes the cause; until then, these files meet the server fresh.
const Sequencer = require('@jest/test-sequencer').default;

const FIRST = [
  'sweep-reconcile.test.ts',
  'slice.test.ts',
  'provisioning.test.ts',
  'bulk.test.ts',
  'liveness.test.ts',
  'teardown.test.ts',
];

function rank(path) {
  const i = FIRST.findIndex((name) => path.endsWith(`/${name}`));
  return i < 0 ? FIRST.length : i;
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
