import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * Recorded machine-workflow histories replay against the current workflow
 * code: a change that would make a running machine's workflow fail on the
 * next deploy (a step added, removed or reordered without a patch or a new
 * workflow type, workflows/patches.ts) fails here first. The histories were
 * exported from local stacks with `temporal workflow show -o json`:
 *
 * - `legacy-machineWorkflow-…`: a `machineWorkflow` run (begun before the
 *   `machine` type) provisioned, then told by the sweep its instance runs;
 * - `machine-…`: the same story for a `machine` run.
 * - `machine-error-continued-as-new`, `machine-destroyed-while-planning`,
 *   `machine-teardown-blocked` (issue 11): a run that failed every zone of
 *   every attempt and continued as new once settled in error; one destroyed
 *   while its planning waited on EC2 (cancelled); one whose teardown EC2
 *   refused (termination protection) until the fault was cleared. Recorded by
 *   test/integration/failure-semantics.test.ts with
 *   `PROVISIONER_RECORD_HISTORIES=<dir>`.
 * - `machine-teardown-blocked-continued` and `…-resumed`: the same blocked
 *   teardown with its status written once and the run continued as new
 *   (`quiet-blocked-teardown`), then the next run finishing it;
 *   `machine-unrecorded-instance-run1…3`: an instance launched and never
 *   recorded, which EC2 would not terminate, kept and carried across
 *   continue-as-new; a retry while EC2 still refused (error again, nothing
 *   launched); the retry that terminated it and launched (`no-orphan-on-error`);
 *   `machine-teardown-list-blocked-then-terminate-blocked`: a teardown blocked
 *   on listing, then on terminating, as code before these changes ran it
 *   (made from `machine-teardown-blocked` by a review: it caught a change that
 *   skipped a status write without a patch);
 *   `machine-observed-without-read`: a running machine told twice of its
 *   instance, recording each from the write alone (`observe-without-read`).
 * - `machine-created-launch` (issue 26): a machine added by add-machine, its
 *   workflow started with what the request wrote (`created`), its first step
 *   planning and claiming from that without a read, then launched and
 *   recorded. Recorded by test/integration/created-launch-workflow.test.ts
 *   before LAUNCH_IN_TASK: the launch an activity, in a second workflow task.
 * - `machine-launch-in-task` (issue 26, LAUNCH_IN_TASK): the same story,
 *   its first read answering `launchInTask`, the launch a local activity of
 *   the first workflow task (no activity task), the instance published by
 *   that task's one upsert. Recorded by the same test. The histories before
 *   it, without `launchInTask` in their first read's answer, replay with the
 *   launch as an activity.
 * - `machine-launch-in-read` (issue 26, LAUNCH_IN_READ): the same story,
 *   the first read launching too (its input names the pass and attempt, its
 *   answer carries the instance, `launched`): one local activity in the first
 *   workflow task. Recorded by the same test. The histories before it, without
 *   `launched`, replay with their launch step (local or not) as they ran.
 *   `machine-launch-in-read-destroyed`: a destroy heard while that read's
 *   launch was out (the read cancelled and waited for: its answer kept, the
 *   instance recorded on the Dead machine and terminated by the teardown).
 *   Recorded by failure-semantics.test.ts with `PROVISIONER_RECORD_HISTORIES=<dir>`.
 *   A replay-compatibility sample only, not a guard that the answer is kept:
 *   it replays on code that drops the answer too (the read again finds the
 *   machine Dead, the same commands); failure-semantics checks the keeping.
 * - `machine-launch-deferred` (issue 26, LAUNCH_OUT_OF_TASK): the same story,
 *   the first read's launch outlasting its budget (withdrawn from its batch):
 *   the read answers `launchInTask: false` and no `launched`, and the first
 *   workflow task schedules the launch as an activity (`startInstance`),
 *   taken by a second task. No marker: the branch is the read's answer, which
 *   code before the budget follows the same way. Recorded by
 *   test/integration/first-launch-budget.test.ts with
 *   `PROVISIONER_RECORD_HISTORIES=<dir>`.
 * - `machine-reprovision-signal-unhandled`: the same run, then a `reprovision`
 *   signal sent to it by code that had no handler (it stayed asleep), then
 *   news of its instance; made from `machine-observed-without-read` and
 *   checked to replay against the workflow code before the handler (5c6cb60^).
 *   A run without the `reprovision-in-workflow` marker must ignore the signal.
 * - `machine-reprovisioned-run1…2`: a machine whose instance was terminated
 *   behind its back, reprovisioned by the API (`reprovision-in-workflow`: the
 *   marker with the signal, the reset, a new launch), continued as new once
 *   settled, then told of its new instance. Recorded by
 *   test/integration/liveness.test.ts with `PROVISIONER_RECORD_HISTORIES=<dir>`.
 * - `machine-teardown-batched-destroy-model`, `…-removal`: one machine of
 *   `npm run bench -- --sizes 1000` (a86f5df) torn down by destroy-model with
 *   its instance (release, tag search, status, terminate, poll, remove: one
 *   activity and workflow task each), and one of the removal phase (in
 *   `error`, no instance), as code before `overlapped-teardown` ran them;
 *   `machine-teardown-overlapped-…`: the same two with that marker (the steps
 *   started together, the DynamoDB writes local, the wait for `terminated`
 *   inside the terminating activity). From the bench's Temporal database.
 *   `machine-teardown-overlapped-found-instance` (issue 30's review): a Dead
 *   machine whose tag search found an instance it never recorded, terminated
 *   (with its status) as soon as the search answered, while the known one's
 *   termination still waited, the machine removed by a local activity;
 *   `…-availability-set`: the same in an availability-set model, removed by
 *   an activity of its own (it may delete the placement group). Recorded by
 *   test/integration/provisioning-workflow.test.ts with
 *   `PROVISIONER_RECORD_HISTORIES=<dir>`.
 * - `machine-teardown-one-step` (issue 30, `one-step-teardown`): a Dead
 *   machine torn down by one activity (release, status, search, terminate,
 *   wait), then a wait for the instance it left, then a local removal.
 *   Recorded the same way. `machine-teardown-one-step-fallback`: its three
 *   tries each released, wrote the status and terminated the known instance,
 *   then failed; the step-by-step teardown took over (release, status,
 *   search, terminate, wait) and removed the machine.
 *   `machine-teardown-one-step-removed` (issue 26, `removed-in-teardown`):
 *   the one activity also removed the machine (its answer says `removed`),
 *   and the run ended with no removal of its own. Recorded the same way. The
 *   two histories above, without `removed` in the answer, still remove the
 *   machine after it.
 * - `machine-failing-mid-pass-carried-label-run1`, `…-run3` (issue 29): a pass
 *   failing every zone, cut between attempts by `bounded-failing-history`
 *   (with `quiet-failover` failovers), the first run and a later one resuming
 *   the attempt it carried; recorded with the since-withdrawn `carried-label`
 *   marker, which the code must still match while replaying (carry.ts).
 *   Recorded by test/integration/temporal-ui.test.ts with
 *   `PROVISIONER_RECORD_HISTORIES=<dir>`.
 * - `machine-lean-…` (issue 26, `lean-launch`, workflows/patches.ts): the
 *   same stories as their namesakes above, recorded after the launch was cut
 *   to one local activity (read, plan and claim), the launch recording its
 *   instance, and one upsert; a run destroyed while its first read planned
 *   (the read cancelled, after its `lean-read-cut` marker). Recorded by failure-semantics.test.ts and
 *   liveness.test.ts with `PROVISIONER_RECORD_HISTORIES=<dir>`. The
 *   histories above, without `prepared` and `recorded` in their answers,
 *   replay the steps as they were.
 * - `machine-slow-first-read-destroyed`, `…-destroyed-while-planning`
 *   (review of issue 26): runs of the code before `lean-launch` (d30b3fc)
 *   whose first read outlasted a workflow-task heartbeat while a destroy
 *   arrived; the read saw the machine Dead (teardown next), or alive
 *   (planning next, cancelled by `destroy-cancels-planning`). Recorded by
 *   failure-semantics.test.ts "a destroy during provisioning" at d30b3fc,
 *   with a test hook delaying each machine's first `loadMachine` by 16 s
 *   (before or after its DynamoDB read) and the destroy sent once the first
 *   workflow task completed. `lean-read-cut` keeps them replaying.
 * - `machine-routine-clears-reprovisioned-run1`, `…-restarted-run1` (issue 26,
 *   `liveness2`, `routine-clears-instance-status`): a machine whose instance
 *   was terminated behind its back, reprovisioned (its new launch clearing the
 *   `terminated` the run had published, the marker in `launchRecorded`); a
 *   machine whose instance was stopped, then told `pending` as the sweep tells
 *   it (the marker in `instanceRecorded`, ProvisionerInstanceStatus cleared)
 *   and started again. Recorded by liveness.test.ts with
 *   `PROVISIONER_RECORD_HISTORIES=<dir>`.
 *
 * Add the history of every new shape of run here when workflow code changes.
 * The replay runs in a process of its own, as a worker does
 * (test/support/replay-histories.ts).
 */
const DIR = join(__dirname, 'histories');
const ROOT = join(__dirname, '..', '..', '..');
const histories = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();

test('there are recorded histories of both machine workflow types', () => {
  expect(histories.some((f) => f.startsWith('legacy-machineWorkflow-'))).toBe(true);
  expect(histories.some((f) => f.startsWith('machine-'))).toBe(true);
});

test('every recorded machine workflow history replays against the current code, twice over in one worker', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'test', 'support', 'replay-histories.ts'), DIR],
    { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
  );
  const results = stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { file: string; pass: number; error?: string });
  // the second pass runs on the modules the first pass's runs shared (worker/preload.ts)
  expect(results.map(({ file, pass }) => ({ file, pass }))).toEqual(
    [1, 2].flatMap((pass) => histories.map((file) => ({ file, pass }))),
  );
  expect(results.filter((r) => r.error !== undefined)).toEqual([]);
}, 300_000);
