import fc from 'fast-check';
import { parseBody } from '../../../functions/http';
import { constraintsPattern, placementPattern } from '../../../functions/grammar';
import { AddMachines, Deploy, SetConstraints } from '../../../functions/schemas';
import { validateConstraints } from '../../../service/constraints';
import { parseMachinePlacement, parseUnitPlacements } from '../../../service/placement';

/**
 * Issue 29: the document's constraints and placement patterns are the
 * server's rules or narrower, never wider. Every value drawn from a pattern
 * passes what the server checks without the model's state (the body schema,
 * Juju's grammar, EC2's validator, the placement parser and add-machine's
 * rules), and the refusals the fuzzer met before fail the pattern.
 */
const RUNS = 400;

function refusal(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('constraints pattern', () => {
  const any = new RegExp(constraintsPattern());
  const forMachines = new RegExp(constraintsPattern({ container: false }));

  it('every value it allows, the server takes (deploy and set-constraints)', () => {
    fc.assert(
      fc.property(fc.stringMatching(any), (constraints) => {
        expect(refusal(() => parseBody(SetConstraints, { constraints }))).toBeUndefined();
        expect(
          refusal(() => parseBody(Deploy, { name: 'app', base: 'ubuntu@22.04', constraints })),
        ).toBeUndefined();
        expect(refusal(() => validateConstraints(constraints))).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  });

  it('every value it allows on add-machine, add-machine takes', () => {
    fc.assert(
      fc.property(fc.stringMatching(forMachines), (constraints) => {
        expect(refusal(() => parseBody(AddMachines, { constraints }))).toBeUndefined();
        const { value } = validateConstraints(constraints);
        expect(refusal(() => parseMachinePlacement(undefined, 1, value))).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  });

  it.each([
    ['cores=2 mem=2G', true],
    ['arch=arm64 cores=4 mem=8G root-disk=20G zones=us-east-1a,us-east-1b', true],
    ['instance-type=t3.micro spaces=db,^dmz allocate-public-ip=true', true],
    ['  mem=512M   ', true],
    ['', true],
    ['mem=-1', false],
    ['cores=two', false],
    ['foo=1', false],
    ['arch=i386', false],
    ['mem=1G mem=2G', false],
    ['spaces=Bad_Space', false],
    ['allocate-public-ip=maybe', false],
    ['mem=2G\ncores=2', false],
    ['tags=a\\', false],
  ])('%j matches: %s', (text, matches) => {
    expect(any.test(text)).toBe(matches);
    if (matches) expect(refusal(() => validateConstraints(text))).toBeUndefined();
    else expect(refusal(() => parseBody(SetConstraints, { constraints: text }))).toBeDefined();
  });

  it('is narrower than the server where a regular expression must be: keys in canonical order', () => {
    // the server takes any order (and answers the canonical one); the pattern cannot say
    // "each key once, in any order" without look-aheads generators cannot honour
    expect(any.test('mem=2G cores=2')).toBe(false);
    expect(validateConstraints('mem=2G cores=2').canonical).toBe('cores=2 mem=2048M');
    expect(any.test(validateConstraints('mem=2G cores=2').canonical)).toBe(true);
  });

  it('add-machine’s pattern has no container key (Juju refuses it there)', () => {
    expect(any.test('container=lxd')).toBe(true);
    expect(forMachines.test('container=lxd')).toBe(false);
    expect(refusal(() => parseMachinePlacement(undefined, 1, { container: 'lxd' }))).toBe(
      'container constraint "lxd" not allowed when adding a machine',
    );
  });
});

describe('placement patterns', () => {
  const unit = new RegExp(placementPattern('unit'));
  const machine = new RegExp(placementPattern('machine'));

  it('every directive it allows in `to`, the placement parser takes', () => {
    fc.assert(
      fc.property(fc.stringMatching(unit), (directive) => {
        expect(refusal(() => parseUnitPlacements([directive]))).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  });

  it('every directive it allows on add-machine, add-machine takes (one machine)', () => {
    fc.assert(
      fc.property(fc.stringMatching(machine), (directive) => {
        expect(refusal(() => parseMachinePlacement(directive, 1))).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
  });

  it.each(['0', '0/lxd/1', 'lxd', 'lxd:3', 'zone=us-east-1a', 'subnet=subnet-0abc1234'])(
    '%j is a unit placement',
    (directive) => {
      expect(unit.test(directive)).toBe(true);
    },
  );

  it.each(['', 'a', 'zone=', 'lxd:', 'lxd:01', 'ssh:ubuntu@10.0.0.1', 'kvm:1'])(
    '%j is not a unit placement, and the server refuses it',
    (directive) => {
      expect(unit.test(directive)).toBe(false);
      expect(refusal(() => parseUnitPlacements([directive]))).toBeDefined();
    },
  );

  it.each(['0', 'a', 'zone=', 'lxd:', 'ssh:', 'ssh:ubuntu@'])(
    '%j is not an add-machine placement, and the server refuses it',
    (directive) => {
      expect(machine.test(directive)).toBe(false);
      expect(refusal(() => parseMachinePlacement(directive, 1))).toBeDefined();
    },
  );

  it('ssh: is add-machine’s only', () => {
    expect(machine.test('ssh:ubuntu@10.0.0.1')).toBe(true);
    expect(refusal(() => parseMachinePlacement('ssh:ubuntu@10.0.0.1', 1))).toBeUndefined();
  });
});
