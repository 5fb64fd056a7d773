import type { Status } from '../../../cli/types';

/**
 * A model with two principal applications and a subordinate, a container, a
 * running machine, one in error and one allocating.
 */
export function sampleStatus(): Status {
  return {
    model: { name: 'demo', region: 'us-east-1', constraints: 'mem=2048M' },
    machines: {
      '0': {
        id: '0',
        base: 'ubuntu@22.04',
        life: 'alive',
        status: 'running',
        message: '',
        instanceId: 'i-0a1b2c3d4e5f60001',
        instanceStatus: 'running',
        imageId: 'ami-0123',
        zone: 'us-east-1a',
        instanceType: 't3.small',
        constraints: 'mem=2048M',
        hardware: { arch: 'amd64', cores: 2, mem: 2048 },
        units: ['wordpress/0'],
        containers: ['0/lxd/0'],
      },
      '0/lxd/0': {
        id: '0/lxd/0',
        base: 'ubuntu@22.04',
        life: 'alive',
        status: 'pending',
        message: 'containers are recorded, not provisioned, by this provisioner',
        constraints: '',
        units: ['mysql/0'],
        containers: [],
      },
      '1': {
        id: '1',
        base: 'ubuntu@22.04',
        life: 'alive',
        status: 'error',
        message:
          'failed to start machine 1 (InsufficientInstanceCapacity: no capacity in us-east-1b)',
        constraints: 'mem=2048M',
        units: ['wordpress/1'],
        containers: [],
      },
      '2': {
        id: '2',
        base: 'ubuntu@22.04',
        life: 'alive',
        status: 'allocating',
        message: 'starting in zone "us-east-1c" (attempt 1 of 10)',
        constraints: 'mem=2048M',
        units: ['wordpress/2'],
        containers: [],
      },
    },
    applications: {
      mysql: {
        base: 'ubuntu@22.04',
        constraints: '',
        subordinate: false,
        units: {
          'mysql/0': { machine: '0/lxd/0', life: 'alive', status: 'allocating', subordinates: [] },
        },
      },
      telegraf: {
        base: 'ubuntu@22.04',
        constraints: '',
        subordinate: true,
        units: {
          'telegraf/0': { machine: '0', life: 'alive', status: 'deployed', subordinates: [] },
          'telegraf/1': { machine: '2', life: 'alive', status: 'allocating', subordinates: [] },
        },
      },
      wordpress: {
        base: 'ubuntu@22.04',
        constraints: 'mem=2048M',
        subordinate: false,
        units: {
          'wordpress/0': {
            machine: '0',
            life: 'alive',
            status: 'deployed',
            subordinates: ['telegraf/0'],
          },
          'wordpress/1': { machine: '1', life: 'alive', status: 'error', subordinates: [] },
          'wordpress/2': {
            machine: '2',
            life: 'alive',
            status: 'allocating',
            subordinates: ['telegraf/1'],
          },
        },
      },
    },
  };
}
