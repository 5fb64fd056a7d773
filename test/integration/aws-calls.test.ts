import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../../infra/bundling';
import { deploymentId } from '../../infra/config';
import {
  OBSERVED_CALLS_FILE,
  componentRoles,
  describeRefusal,
  isKnownRefusal,
  launchesAllTagged,
  parseObservedCalls,
  refusals,
} from '../support/iam-grants';
import { ENVIRONMENT_AGNOSTIC, synthEnvironment } from '../unit/infra/synth';

/**
 * Runs last (jest.sequencer.js): every AWS call the worker and each API
 * group made during this run of the suite (local/aws-call-recorder.ts) must
 * be granted, conditions included, to the role that component runs as in the
 * synthesized template. With PROVISIONER_UPDATE_AWS_CALLS=1 the calls seen
 * are merged into the checked-in list the unit IAM test reads.
 */
describe('AWS calls the suite made are granted by the template', () => {
  const file = process.env.PROVISIONER_TEST_AWS_CALLS_FILE;

  it('every call of every component, by the role it runs as', () => {
    expect(file).toBeDefined();
    expect(existsSync(file!)).toBe(true);
    const calls = parseObservedCalls(readFileSync(file!, 'utf8'));
    // the stack made calls, each attributed to a component that has a role
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.filter((c) => c.component.endsWith('unknown')).map((c) => c.line)).toEqual([]);
    expect(launchesAllTagged(calls)).toBe(true);

    const synth = synthEnvironment('dev', {}, ENVIRONMENT_AGNOSTIC, { bundle: false });
    try {
      const roles = componentRoles(synth.stack, synth.template);
      const refused = refusals(calls, roles, deploymentId(synth.stack.config));
      expect(refused.filter((r) => !isKnownRefusal(r)).map(describeRefusal)).toEqual([]);
    } finally {
      synth.cleanup();
    }

    const listed = path.join(PROJECT_ROOT, OBSERVED_CALLS_FILE);
    const known = new Set(
      existsSync(listed) ? parseObservedCalls(readFileSync(listed, 'utf8')).map((c) => c.line) : [],
    );
    const fresh = calls.map((c) => c.line).filter((line) => !known.has(line));
    if (process.env.PROVISIONER_UPDATE_AWS_CALLS === '1') {
      const header = `# AWS calls the integration suite made, by component (local/aws-call-recorder.ts).\n# Refresh: PROVISIONER_UPDATE_AWS_CALLS=1 npx jest --selectProjects integration\n`;
      writeFileSync(listed, header + [...new Set([...known, ...fresh])].sort().join('\n') + '\n');
    } else if (fresh.length > 0) {
      // granted (checked above); the unit IAM test's list lacks them until refreshed
      console.warn(`calls not in ${OBSERVED_CALLS_FILE} yet:\n${fresh.join('\n')}`);
    }
  }, 300_000); // one synth (no bundling): 9 s alone, 86 s measured on the busy shared machine
});
