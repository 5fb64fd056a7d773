import { TerminateInstancesCommand } from '@aws-sdk/client-ec2';
import { SSMClient } from '@aws-sdk/client-ssm';
import { ssmActivities } from '../../activities/ssm';
import { provisioningTuning } from '../../config/env';
import { containerName } from '../../core/containers';
import type { SsmCommandRecord } from '../../local/ec2-proxy/ssm';
import { ContainerStore } from '../../state/containers';
import { Repository } from '../../state/repository';
import { apiClient, eventually, uniqueName } from './api-client';
import { dynamoClientFor, ec2ClientFor, loadTestStack } from './stack';

/**
 * Containers on their hosts (issue 15), on the local stack: the worker runs
 * SSM Run Command through the EC2 proxy, which records every command sent
 * (what a real host would run) and can make them fail.
 */
const stack = loadTestStack();
const api = apiClient(stack);
const ddb = dynamoClientFor(stack);
const ec2 = ec2ClientFor(stack);
const repo = new Repository(ddb, stack.tableName);
const ssm = new SSMClient({
  region: stack.region,
  endpoint: stack.ec2Endpoint,
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  maxAttempts: 1,
});

afterAll(() => {
  ddb.destroy();
  ec2.destroy();
  ssm.destroy();
});

afterEach(async () => {
  await admin('DELETE', '/_admin/ssm/faults');
  await admin('DELETE', '/_admin/latency');
});

async function admin(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${stack.ec2Endpoint}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(res.status).toBe(200);
  return res.json();
}

/** The commands the proxy saw for one container (by its LXD name). */
async function commandsFor(name: string): Promise<SsmCommandRecord[]> {
  const { commands } = (await admin('GET', '/_admin/ssm/commands')) as {
    commands: SsmCommandRecord[];
  };
  return commands.filter((c) => c.commands.some((line) => line.includes(` '${name}'`)));
}

const machine = (model: string, id: string) =>
  api.get(`/v1/models/${model}/machines/${encodeURIComponent(id)}`);

async function newModel(prefix: string): Promise<{ model: string; uid: string }> {
  const model = uniqueName(prefix);
  expect((await api.post('/v1/models', { name: model })).status).toBe(201);
  const uid = (await repo.getModel(model)).uid;
  return { model, uid };
}

async function runningHost(model: string): Promise<{ instanceId: string; zone: string }> {
  const added = await api.post(`/v1/models/${model}/machines`, { base: 'ubuntu@22.04' });
  expect(added.status).toBe(201);
  const host = await eventually(
    () => machine(model, '0'),
    (res) => res.body?.status === 'running',
    120_000,
  );
  return { instanceId: host.body.instanceId as string, zone: host.body.zone as string };
}

async function addContainer(model: string, placement: string, base = 'ubuntu@22.04') {
  const res = await api.post(`/v1/models/${model}/machines`, { placement, base });
  expect(res.status).toBe(201);
  return (res.body.machines as Array<{ id: string }>)[0]!.id;
}

const untilStatus = (model: string, id: string, status: string) =>
  eventually(
    () => machine(model, id),
    (res) => res.body?.status === status,
    120_000,
  );

describe('a container on a running host', () => {
  it('is created by one Run Command and recorded running in its host’s zone; a retried send sends nothing', async () => {
    const { model, uid } = await newModel('ct-run');
    const host = await runningHost(model);
    const id = await addContainer(model, 'lxd:0');
    expect(id).toBe('0/lxd/0');
    const running = await untilStatus(model, id, 'running');
    expect(running.body).toMatchObject({ id, status: 'running', message: '', zone: host.zone });
    expect(running.body.instanceId).toBeUndefined();

    const name = containerName({ model, modelUid: uid, machineId: id });
    expect(name).toBe(
      `juju-${uid
        .replace(/[^a-z0-9]/gi, '')
        .slice(-6)
        .toLowerCase()}-0-lxd-0`,
    );
    const sent = await commandsFor(name);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      documentName: 'AWS-RunShellScript',
      instanceIds: [host.instanceId],
      region: stack.region,
      commands: [
        'set -eu',
        'command -v lxc >/dev/null 2>&1 || snap install lxd',
        'flock /run/provisioner-lxd-init.lock sh -c \'[ -n "$(lxc storage list --format csv 2>/dev/null)" ] || lxd init --auto\'',
        `lxc info '${name}' >/dev/null 2>&1 || lxc launch 'ubuntu:22.04' '${name}'`,
      ],
    });

    // The activity retried (a worker that died after sending): the recorded command is found, none sent.
    const activities = ssmActivities({
      repo,
      tuning: provisioningTuning({}),
      containers: new ContainerStore(ddb, stack.tableName),
      ssmForRegion: () => ssm,
    });
    const again = await activities.sendContainerCommand({
      model,
      machineId: id,
      region: stack.region,
      instanceId: host.instanceId,
      action: 'create',
      base: 'ubuntu@22.04',
      modelUid: uid,
    });
    expect(again).toEqual({ commandId: sent[0]!.commandId, name, sent: false });
    expect(await commandsFor(name)).toHaveLength(1);
    // and the container stays as it is
    expect((await machine(model, id)).body.status).toBe('running');
  });

  it('of another base is launched from its own base’s image', async () => {
    const { model, uid } = await newModel('ct-base');
    await runningHost(model);
    const id = await addContainer(model, 'lxd:0', 'ubuntu@24.04');
    await untilStatus(model, id, 'running');
    const name = containerName({ model, modelUid: uid, machineId: id });
    const [sent] = await commandsFor(name);
    expect(sent?.commands.at(-1)).toBe(
      `lxc info '${name}' >/dev/null 2>&1 || lxc launch 'ubuntu:24.04' '${name}'`,
    );
  });
});

describe('a base that is a shell fragment (issue 23)', () => {
  it('is refused with 400 naming the base, nothing is recorded, and no command reaches the host', async () => {
    const { model, uid } = await newModel('ct-inject');
    await runningHost(model);
    const base = 'ubuntu@22.04 || touch pwned;#';
    const message =
      'parsing base "ubuntu@22.04 || touch pwned;#": track in channel "22.04 || touch pwned;#" not valid';

    const deploy = await api.post(`/v1/models/${model}/applications`, {
      name: 'evil',
      base,
      to: ['lxd:0'],
    });
    expect(deploy.status).toBe(400);
    expect(deploy.body).toEqual({ error: { code: 'bad-request', message } });
    const addMachine = await api.post(`/v1/models/${model}/machines`, {
      placement: 'lxd:0',
      base,
    });
    expect(addMachine.status).toBe(400);
    expect(addMachine.body).toEqual({ error: { code: 'bad-request', message } });
    expect((await api.get(`/v1/models/${model}/applications/evil`)).status).toBe(404);
    expect((await machine(model, '0/lxd/0')).status).toBe(404);
    expect((await machine(model, '0')).body.containers).toEqual([]);

    // a container of an OS LXD has no image for, or that the host cannot run: refused as well
    const centos = await api.post(`/v1/models/${model}/machines`, {
      placement: 'lxd:0',
      base: 'centos@9',
    });
    expect(centos.status).toBe(400);
    expect(centos.body).toEqual({
      error: {
        code: 'bad-request',
        message: 'no LXD image for base "centos@9" (only ubuntu bases are supported)',
      },
    });
    const windows = await api.post(`/v1/models/${model}/applications`, {
      name: 'win',
      base: 'windows@2022',
      to: ['lxd:0'],
    });
    expect(windows.status).toBe(400);
    expect(windows.body.error.code).toBe('bad-request');

    // a container that is allowed goes through to the end, so the worker has had its chance
    const id = await addContainer(model, 'lxd:0');
    expect(id).toBe('0/lxd/0');
    await untilStatus(model, id, 'running');
    const { commands } = (await admin('GET', '/_admin/ssm/commands')) as {
      commands: SsmCommandRecord[];
    };
    expect(commands.filter((c) => c.commands.some((line) => line.includes('pwned')))).toEqual([]);
    const name = containerName({ model, modelUid: uid, machineId: id });
    expect((await commandsFor(name)).map((c) => c.commands.at(-1))).toEqual([
      `lxc info '${name}' >/dev/null 2>&1 || lxc launch 'ubuntu:22.04' '${name}'`,
    ]);
  });
});

describe('a container whose host is not running yet', () => {
  it('waits for the host to run and come online, then is created', async () => {
    // new instances report `pending` for 6 s (and SSM does not see them until they run)
    await admin('PUT', '/_admin/latency', { pendingToRunning: 6000 });
    const { model, uid } = await newModel('ct-wait');
    const id = await addContainer(model, 'lxd');
    expect(id).toBe('0/lxd/0');
    // recorded `waiting for machine 0`; its workflow then says what it waits for
    const waitingFor =
      /^waiting for machine 0 (to be running \((pending|allocating)\)|\(i-[0-9a-f]+\) to come online in Systems Manager)$/;
    const waiting = await eventually(
      () => machine(model, id),
      (res) => res.body?.status === 'pending' && waitingFor.test(res.body?.message),
      60_000,
      100,
    );
    expect(waiting.body.status).toBe('pending');
    const name = containerName({ model, modelUid: uid, machineId: id });
    expect(await commandsFor(name)).toHaveLength(0);
    const running = await untilStatus(model, id, 'running');
    const host = (await machine(model, '0')).body;
    expect(running.body.zone).toBe(host.zone);
    const sent = await commandsFor(name);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.instanceIds).toEqual([host.instanceId]);
  });
});

describe('a container whose command fails', () => {
  it('goes to error with the command’s output, and a retry sends it again', async () => {
    const { model, uid } = await newModel('ct-fail');
    const host = await runningHost(model);
    const name = containerName({ model, modelUid: uid, machineId: '0/lxd/0' });
    await admin('PUT', '/_admin/ssm/faults', {
      failCommands: {
        match: `lxc launch 'ubuntu:22.04' '${name}'`,
        exitCode: 1,
        stdout: 'Creating the instance',
        stderr: 'Error: Failed instance creation: no space left on device\n',
      },
    });
    const id = await addContainer(model, 'lxd:0');
    const failed = await untilStatus(model, id, 'error');
    expect(failed.body.message).toBe(
      `creating container ${name} on machine 0 (${host.instanceId}) failed: Failed (exit 1): ` +
        'Error: Failed instance creation: no space left on device',
    );
    expect(failed.body.zone).toBeUndefined();
    expect(await commandsFor(name)).toHaveLength(1);

    await admin('DELETE', '/_admin/ssm/faults');
    expect(
      (await api.post(`/v1/models/${model}/machines/${encodeURIComponent(id)}/retry`, {})).status,
    ).toBe(202);
    const running = await untilStatus(model, id, 'running');
    expect(running.body.zone).toBe(host.zone);
    const sent = await commandsFor(name);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.commands).toEqual(sent[0]!.commands);
  });
});

describe('removing a container', () => {
  it('deletes it on its host through Run Command, removes the machine and keeps the host', async () => {
    const { model, uid } = await newModel('ct-remove');
    const host = await runningHost(model);
    const id = await addContainer(model, 'lxd:0');
    await untilStatus(model, id, 'running');
    // the host is not Dead while it hosts a container
    const refused = await api.delete(`/v1/models/${model}/machines/0`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toBe(`machine 0 is hosting containers "${id}"`);

    expect(
      (await api.delete(`/v1/models/${model}/machines/${encodeURIComponent(id)}`)).status,
    ).toBe(202);
    await eventually(
      () => machine(model, id),
      (res) => res.status === 404,
      120_000,
    );
    const name = containerName({ model, modelUid: uid, machineId: id });
    const sent = await commandsFor(name);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toMatchObject({
      documentName: 'AWS-RunShellScript',
      instanceIds: [host.instanceId],
      commands: [
        'set -eu',
        'command -v lxc >/dev/null 2>&1 || exit 0',
        `if lxc info '${name}' >/dev/null 2>&1; then lxc delete --force '${name}'; fi`,
      ],
    });
    const kept = await machine(model, '0');
    expect(kept.body).toMatchObject({ status: 'running', life: 'alive', containers: [] });
    expect(kept.body.instanceId).toBe(host.instanceId);
  });

  it('with --force on its host: the container is deleted first, then the host goes', async () => {
    const { model, uid } = await newModel('ct-force');
    await runningHost(model);
    const id = await addContainer(model, 'lxd:0');
    await untilStatus(model, id, 'running');
    expect((await api.delete(`/v1/models/${model}/machines/0?force=true`)).status).toBe(202);
    await eventually(
      () => machine(model, '0'),
      (res) => res.status === 404,
      120_000,
    );
    expect((await machine(model, id)).status).toBe(404);
    const name = containerName({ model, modelUid: uid, machineId: id });
    const sent = await commandsFor(name);
    expect(sent.map((c) => c.commands.at(-1))).toEqual([
      `lxc info '${name}' >/dev/null 2>&1 || lxc launch 'ubuntu:22.04' '${name}'`,
      `if lxc info '${name}' >/dev/null 2>&1; then lxc delete --force '${name}'; fi`,
    ]);
  });
});

describe('a host that goes down', () => {
  it('puts its containers down', async () => {
    const { model } = await newModel('ct-down');
    const host = await runningHost(model);
    const id = await addContainer(model, 'lxd:0');
    await untilStatus(model, id, 'running');
    await ec2.send(new TerminateInstancesCommand({ InstanceIds: [host.instanceId] }));
    const down = await untilStatus(model, id, 'down');
    expect(down.body.message).toBe('host machine 0 is down');
    expect((await machine(model, '0')).body.status).toBe('down');
  });
});
