/**
 * What reaches a host's root shell through SSM (issue 23, item 1): every
 * field of a container command that comes from a request or a record —
 * model name, model uid, machine id, base — fed shell metacharacters, and
 * the exact command sent checked twice: as text, and by running each line in
 * a real `sh` with `lxc` replaced by a function that prints its arguments
 * (so a fragment that escaped its word would show as another command, or
 * create the file it touches).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SendCommandCommandInput, SSMClient } from '@aws-sdk/client-ssm';
import { ApplicationFailure } from '@temporalio/common';
import { ssmActivities } from '../../../activities/ssm';
import type { ActivityDeps } from '../../../activities/deps';
import type { ContainerCommand, ContainerStore } from '../../../state/containers';

// lower case: container names are, so a fragment that escaped would name this very file
const dir = join(tmpdir(), `ssm-quote-${process.pid}-${Date.now().toString(36)}`);
mkdirSync(dir);
const PWNED = join(dir, 'pwned');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Metacharacters of every kind a POSIX shell gives meaning to, and control characters. */
const HOSTILE = [
  `x || touch ${PWNED};#`,
  `x; touch ${PWNED}`,
  `$(touch ${PWNED})`,
  `\`touch ${PWNED}\``,
  `x' ; touch ${PWNED} ; '`,
  `x"; touch ${PWNED}; "`,
  `x\ntouch ${PWNED}`,
  `x & touch ${PWNED} &`,
  `x | tee ${PWNED}`,
  `x > ${PWNED}`,
  '${IFS}*?[a]~{a,b}\\',
  'x\u0000\u0007\r\t\u001b[2J',
];

function harness() {
  const sent: SendCommandCommandInput[] = [];
  const commands = new Map<string, ContainerCommand>();
  const store = {
    command: (model: string, id: string) => Promise.resolve(commands.get(`${model} ${id}`)),
    recordCommand: (model: string, id: string, c: ContainerCommand) => {
      commands.set(`${model} ${id}`, c);
      return Promise.resolve();
    },
  } as unknown as ContainerStore;
  const client = {
    send: (command: { input: SendCommandCommandInput }) => {
      sent.push(command.input);
      return Promise.resolve({ Command: { CommandId: `cmd-${sent.length}` } });
    },
  } as unknown as SSMClient;
  const activities = ssmActivities({
    ...({} as Pick<ActivityDeps, 'repo' | 'tuning'>),
    containers: store,
    ssmForRegion: () => client,
  });
  return { activities, sent };
}

/**
 * Runs a script line with `lxc` recording its calls on fd 3 (the line sends
 * `lxc info`'s own output to /dev/null), arguments separated by US and calls
 * by RS; `info` answers `infoStatus`.
 */
function runWithFakeLxc(line: string, infoStatus: number): string[][] {
  const fake = `lxc() { for a in "$@"; do printf '\\037%s' "$a" >&3; done; printf '\\036' >&3; [ "$1" != info ] || return ${infoStatus}; }`;
  const out = execFileSync('sh', ['-c', `exec 3>&1; ${fake}\n${line}`], {
    encoding: 'utf8',
    cwd: dir,
  });
  return out
    .split('\u001e')
    .filter((call) => call !== '')
    .map((call) => call.split('\u001f').slice(1));
}

const quoted = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

describe('container commands sent through SSM', () => {
  const fields = ['model', 'modelUid', 'machineId'] as const;
  const cases = fields.flatMap((field) => HOSTILE.map((value) => [field, value] as const));

  it.each(cases)(
    '%s = %j: every argument is one quoted word, and nothing else runs',
    async (field, value) => {
      const { activities, sent } = harness();
      const input = {
        model: 'demo',
        machineId: '0/lxd/0',
        region: 'us-east-1',
        instanceId: 'i-0abc',
        base: 'ubuntu@22.04',
        [field]: value,
      };
      const created = await activities.sendContainerCommand({ ...input, action: 'create' });
      const deleted = await activities.sendContainerCommand({ ...input, action: 'delete' });
      expect(created.name).toBe(deleted.name);
      const name = created.name;
      expect(sent).toHaveLength(2);

      const [create, remove] = sent;
      expect(create).toMatchObject({
        DocumentName: 'AWS-RunShellScript',
        InstanceIds: ['i-0abc'],
      });
      expect(create!.Parameters!.commands).toEqual([
        'set -eu',
        'command -v lxc >/dev/null 2>&1 || snap install lxd',
        'flock /run/provisioner-lxd-init.lock sh -c \'[ -n "$(lxc storage list --format csv 2>/dev/null)" ] || lxd init --auto\'',
        `lxc info ${quoted(name)} >/dev/null 2>&1 || lxc launch 'ubuntu:22.04' ${quoted(name)}`,
      ]);
      expect(remove!.Parameters!.commands).toEqual([
        'set -eu',
        'command -v lxc >/dev/null 2>&1 || exit 0',
        `if lxc info ${quoted(name)} >/dev/null 2>&1; then lxc delete --force ${quoted(name)}; fi`,
      ]);

      // what a shell makes of the lines: exactly these lxc calls, each argument whole
      const launch = create!.Parameters!.commands!.at(-1)!;
      const del = remove!.Parameters!.commands!.at(-1)!;
      if (!name.includes('\u0000')) {
        expect(runWithFakeLxc(launch, 1)).toEqual([
          ['info', name],
          ['launch', 'ubuntu:22.04', name],
        ]);
        expect(runWithFakeLxc(del, 0)).toEqual([
          ['info', name],
          ['delete', '--force', name],
        ]);
      }
      expect(existsSync(PWNED)).toBe(false);
    },
  );

  it.each(HOSTILE.map((v) => [`ubuntu@22.04${v}`]))(
    'base %j: refused before anything is sent',
    async (base) => {
      const { activities, sent } = harness();
      const attempt = activities.sendContainerCommand({
        model: 'demo',
        machineId: '0/lxd/0',
        region: 'us-east-1',
        instanceId: 'i-0abc',
        base,
        action: 'create',
      });
      await expect(attempt).rejects.toBeInstanceOf(ApplicationFailure);
      await expect(attempt).rejects.toMatchObject({
        type: 'ContainerFailed',
        nonRetryable: true,
      });
      // the track holds a shell word (or, with a `/`, the channel does not even parse)
      await expect(attempt).rejects.toThrow(
        /^(parsing base ".*": track in channel ".*" not valid|risk in channel ".*" not valid|channel is malformed and has too many components ".*")$/s,
      );
      expect(sent).toEqual([]);
    },
  );
});
