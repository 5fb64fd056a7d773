import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { CONSTRAINT_ALIASES } from '../../../core';
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

/**
 * The key a constraints string gives twice (an alias counts as its key), the
 * one rule the pattern does not state; `allocate-public-ip=` sets nothing,
 * so it repeats nothing (core/constraints.ts).
 */
function repeatedKey(text: string): string | undefined {
  const seen = new Set<string>();
  for (const item of text.trim().split(/ +/).filter(Boolean)) {
    const at = item.indexOf('=');
    const given = item.slice(0, at);
    const key = Object.hasOwn(CONSTRAINT_ALIASES, given) ? CONSTRAINT_ALIASES[given]! : given;
    if (key === 'allocate-public-ip' && item.slice(at + 1) === '') continue;
    if (seen.has(key)) return key;
    seen.add(key);
  }
  return undefined;
}

/** Every constraints string in the API document's examples (`"constraints": "…"`). */
function documentedConstraints(): string[] {
  const doc = readFileSync(path.join(__dirname, '../../../docs/api.md'), 'utf8');
  return [...doc.matchAll(/"constraints": "([^"]*)"/g)].map((m) => m[1]!);
}

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

  it('every value it allows, the server takes (deploy and set-constraints), unless it repeats a key', () => {
    let taken = 0;
    fc.assert(
      fc.property(fc.stringMatching(any), (constraints) => {
        const repeated = repeatedKey(constraints);
        if (repeated !== undefined) {
          // the one rule the pattern leaves to the description (and the fuzzer's expected refusals)
          expect(refusal(() => validateConstraints(constraints))).toBe(
            `bad "${repeated}" constraint: already set`,
          );
          expect(refusal(() => parseBody(SetConstraints, { constraints }))).toBeDefined();
          return;
        }
        taken += 1;
        expect(refusal(() => parseBody(SetConstraints, { constraints }))).toBeUndefined();
        expect(
          refusal(() => parseBody(Deploy, { name: 'app', base: 'ubuntu@22.04', constraints })),
        ).toBeUndefined();
        expect(refusal(() => validateConstraints(constraints))).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
    // most draws repeat no key, so the property is about accepted values, not only refusals
    expect(taken).toBeGreaterThan(RUNS / 4);
  });

  it('what the server answers for any value it allows, it allows again (a read constraints string can be sent back)', () => {
    fc.assert(
      fc.property(fc.stringMatching(any), (constraints) => {
        fc.pre(repeatedKey(constraints) === undefined);
        const { canonical } = validateConstraints(constraints);
        expect({ canonical, matches: any.test(canonical) }).toEqual({ canonical, matches: true });
      }),
      { numRuns: RUNS },
    );
  });

  it.each([
    ['root-disk=3000G', 'root-disk=3072000M'],
    ['mem=1T', 'mem=1048576M'],
    ['mem=8000P', 'mem=8589934592000M'],
    ['root-disk=999999999T', 'root-disk=1048575998951424M'],
    ['mem=8999999999999999M cores=999999999999999', 'cores=999999999999999 mem=8999999999999999M'],
    ['cpu-cores=4096 cpu-power=123456789012', 'cores=4096 cpu-power=123456789012'],
  ])('large values: %j is answered as %j, which the pattern takes', (given, answered) => {
    expect(any.test(given)).toBe(true);
    expect(validateConstraints(given).canonical).toBe(answered);
    expect(any.test(answered)).toBe(true);
    expect(validateConstraints(answered).canonical).toBe(answered);
  });

  it('takes keys in any order: `mem=2G cores=2` and every constraints example of the API document', () => {
    const examples = documentedConstraints();
    expect(examples).toEqual(expect.arrayContaining(['mem=2G cores=2', 'mem=2048M cores=2']));
    for (const text of [...examples, 'mem=2G cores=2', 'zones=us-east-1a mem=4G arch=arm64']) {
      expect({ text, matches: any.test(text) }).toEqual({ text, matches: true });
      expect(refusal(() => validateConstraints(text))).toBeUndefined();
    }
    expect(validateConstraints('mem=2G cores=2').canonical).toBe('cores=2 mem=2048M');
  });

  it('every value it allows on add-machine, add-machine takes, unless it repeats a key', () => {
    fc.assert(
      fc.property(fc.stringMatching(forMachines), (constraints) => {
        fc.pre(repeatedKey(constraints) === undefined);
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
    ['spaces=Bad_Space', false],
    ['allocate-public-ip=maybe', false],
    ['mem=2G\ncores=2', false],
    ['tags=a\\', false],
  ])('%j matches: %s', (text, matches) => {
    expect(any.test(text)).toBe(matches);
    if (matches) expect(refusal(() => validateConstraints(text))).toBeUndefined();
    else expect(refusal(() => parseBody(SetConstraints, { constraints: text }))).toBeDefined();
  });

  it('is wider than the server in one rule only, stated in the description: each key once', () => {
    // a regular expression could say it only with look-aheads generators cannot honour
    expect(any.test('mem=1G mem=2G')).toBe(true);
    expect(any.test('cores=2 cpu-cores=2')).toBe(true);
    expect(refusal(() => validateConstraints('mem=1G mem=2G'))).toBe(
      'bad "mem" constraint: already set',
    );
    expect(refusal(() => validateConstraints('cores=2 cpu-cores=2'))).toBe(
      'bad "cores" constraint: already set',
    );
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
