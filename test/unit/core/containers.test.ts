import {
  containerImage,
  containerName,
  createContainerScript,
  deleteContainerScript,
  isFinalCommandStatus,
  outputTail,
  shellQuote,
} from '../../../core/containers';
import { InvalidBaseError } from '../../../core/errors';
import { expectThrows } from './helpers';

describe('containerName', () => {
  it.each([
    [
      { model: 'demo', modelUid: 'c6a1f0de-3b5e-4f8e-9d2a-0f4e8b9a4f2a', machineId: '0/lxd/0' },
      'juju-9a4f2a-0-lxd-0',
    ],
    [
      { model: 'demo', modelUid: 'C6A1F0DE-3B5E-4F8E-9D2A-0F4E8B9A4F2A', machineId: '12/lxd/3' },
      'juju-9a4f2a-12-lxd-3',
    ],
    // a model recorded before model uids: its name stands in
    [{ model: 'web-prod', machineId: '1/lxd/0' }, 'juju-web-prod-1-lxd-0'],
  ])('%j → %s', (input, expected) => {
    expect(containerName(input)).toBe(expected);
  });

  it('stays within LXD’s 63 characters and never ends in a hyphen', () => {
    const name = containerName({ model: `m${'-a'.repeat(40)}`, machineId: '100/lxd/7' });
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name).toMatch(/^juju-m[a-z0-9-]*[a-z0-9]$/);
  });
});

describe('containerImage', () => {
  it.each([
    ['ubuntu@22.04', 'ubuntu:22.04'],
    ['ubuntu@24.04', 'ubuntu:24.04'],
    ['ubuntu@20.04/edge', 'ubuntu:20.04'],
  ])('%s → %s', (base, image) => {
    expect(containerImage(base)).toBe(image);
  });

  it('refuses a base with no LXD image', () => {
    expectThrows(
      () => containerImage('centos@7'),
      InvalidBaseError,
      'no LXD image for base "centos@7" (only ubuntu bases are supported)',
    );
  });

  it('refuses a base no request could give (a record written before bases were checked)', () => {
    expectThrows(
      () => containerImage('ubuntu@22.04 || touch pwned;#'),
      InvalidBaseError,
      'parsing base "ubuntu@22.04 || touch pwned;#": track in channel "22.04 || touch pwned;#" not valid',
    );
  });
});

describe('shellQuote', () => {
  it.each([
    ['juju-9a4f2a-0-lxd-0', "'juju-9a4f2a-0-lxd-0'"],
    ['', "''"],
    ["it's", "'it'\\''s'"],
    ["'", "''\\'''"],
    ['a b;c|d&e$(f)`g`\\h\n*?', "'a b;c|d&e$(f)`g`\\h\n*?'"],
  ])('%j → %s', (word, quoted) => {
    expect(shellQuote(word)).toBe(quoted);
  });
});

describe('scripts', () => {
  it('create: LXD initialised once under a lock, then the container launched unless it exists', () => {
    expect(createContainerScript('juju-9a4f2a-0-lxd-0', 'ubuntu:22.04')).toEqual([
      'set -eu',
      'command -v lxc >/dev/null 2>&1 || snap install lxd',
      'flock /run/provisioner-lxd-init.lock sh -c \'[ -n "$(lxc storage list --format csv 2>/dev/null)" ] || lxd init --auto\'',
      "lxc info 'juju-9a4f2a-0-lxd-0' >/dev/null 2>&1 || lxc launch 'ubuntu:22.04' 'juju-9a4f2a-0-lxd-0'",
    ]);
  });

  it('delete: only an existing container, and nothing on a host without LXD', () => {
    expect(deleteContainerScript('juju-9a4f2a-0-lxd-0')).toEqual([
      'set -eu',
      'command -v lxc >/dev/null 2>&1 || exit 0',
      "if lxc info 'juju-9a4f2a-0-lxd-0' >/dev/null 2>&1; then lxc delete --force 'juju-9a4f2a-0-lxd-0'; fi",
    ]);
  });
});

describe('isFinalCommandStatus', () => {
  it.each([
    ['Pending', false],
    ['InProgress', false],
    ['Delayed', false],
    ['Success', true],
    ['Failed', true],
    ['TimedOut', true],
    ['Cancelled', true],
    ['Undeliverable', true],
  ])('%s → %s', (status, final) => {
    expect(isFinalCommandStatus(status)).toBe(final);
  });
});

describe('outputTail', () => {
  it('keeps the last non-empty lines', () => {
    expect(outputTail('a\nb\n\nc\nd\ne\nf\n\n')).toBe('b\nc\nd\ne\nf');
    expect(outputTail('')).toBe('');
  });

  it('cuts a long tail from the front', () => {
    const tail = outputTail('x'.repeat(1000), 5, 50);
    expect(tail).toHaveLength(50);
    expect(tail.startsWith('…')).toBe(true);
  });
});
