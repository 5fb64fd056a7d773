import type { IncomingHttpHeaders } from 'node:http';
import { z } from 'zod';
import { issueKey, onlyFields, parseAdminBody } from './admin-body';
import type { UpstreamAnswer } from './upstream';

/**
 * Systems Manager on the local stack (issue 15): SSM's JSON protocol
 * (`X-Amz-Target: AmazonSSM.<Action>`) reaches the same endpoint as EC2.
 *
 * - `SendCommand` and `GetCommandInvocation` go to moto, which records the
 *   command and reports every invocation `Success` at once. The proxy first
 *   refuses a command to an instance that is not online (as SSM answers
 *   `InvalidInstanceId`), records what was sent (`GET /_admin/ssm/commands`:
 *   exactly what a real host would run, and how many times), and rewrites
 *   the invocation of a command sent while a fault was set (`Failed`, with
 *   the fault's exit code and output) or still within its duration
 *   (`InProgress`).
 * - `DescribeInstanceInformation`, which moto lacks, is answered here: an
 *   instance launched through the proxy is a managed instance, `Online` once
 *   it reports `running` (after the `pendingToRunning` latency) and until it
 *   is terminated — as an Ubuntu instance whose SSM agent may register.
 * - Every other SSM action is forwarded to moto as it is.
 */

export interface SsmCommandRecord {
  readonly commandId: string;
  readonly region: string;
  readonly documentName: string;
  readonly instanceIds: readonly string[];
  /** The `commands` parameter: the lines of the shell script. */
  readonly commands: readonly string[];
  readonly comment: string;
  readonly sentAt: string;
}

/** Admin settings (`PUT /_admin/ssm/faults`). */
export interface SsmFaults {
  /** Commands sent from now on end `Failed` (only those whose script contains `match`, when given). */
  readonly failCommands?: {
    readonly match?: string;
    readonly exitCode: number;
    readonly stdout: string;
    readonly stderr: string;
  };
  /** Commands sent from now on report `InProgress` this long (ms) before their end. */
  readonly commandDurationMs?: number;
}

interface Outcome {
  readonly failed?: NonNullable<SsmFaults['failCommands']>;
  readonly endsAt: number;
}

export interface SsmBackend {
  /** Sends the request to moto as it came. */
  forward(headers: IncomingHttpHeaders, body: Buffer): Promise<UpstreamAnswer>;
  /** Those of the instances that SSM would call online. */
  online(region: string, instanceIds: readonly string[]): Promise<Set<string>>;
  /** Every instance launched through the proxy in the region. */
  launched(region: string): readonly string[];
}

export interface SsmAnswer {
  readonly status: number;
  readonly body: string;
}

export const SSM_TARGET_PREFIX = 'AmazonSSM.';

/** The SSM action of a request, if it is one. */
export function ssmAction(headers: IncomingHttpHeaders): string | undefined {
  const target = headers['x-amz-target'];
  const value = Array.isArray(target) ? target[0] : target;
  return value?.startsWith(SSM_TARGET_PREFIX) ? value.slice(SSM_TARGET_PREFIX.length) : undefined;
}

function ssmError(status: number, type: string, message: string): SsmAnswer {
  return { status, body: JSON.stringify({ __type: type, message }) };
}

function parseObject(body: Buffer): Record<string, unknown> {
  try {
    const parsed = JSON.parse(body.toString('utf8') || '{}') as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

/** The instance ids a DescribeInstanceInformation request filters on (either filter style), if any. */
function filteredIds(request: Record<string, unknown>): string[] | undefined {
  const ids: string[] = [];
  let filtered = false;
  for (const f of Array.isArray(request.Filters) ? (request.Filters as unknown[]) : []) {
    const filter = f as { Key?: unknown; Values?: unknown };
    if (filter.Key === 'InstanceIds') {
      filtered = true;
      ids.push(...strings(filter.Values));
    }
  }
  const list = request.InstanceInformationFilterList;
  for (const f of Array.isArray(list) ? (list as unknown[]) : []) {
    const filter = f as { key?: unknown; valueSet?: unknown };
    if (filter.key === 'InstanceIds') {
      filtered = true;
      ids.push(...strings(filter.valueSet));
    }
  }
  return filtered ? ids : undefined;
}

export class SsmEmulation {
  private readonly sent: SsmCommandRecord[] = [];
  private readonly outcomes = new Map<string, Outcome>();
  faults: SsmFaults = {};

  constructor(private readonly clock: () => number = Date.now) {}

  commands(): readonly SsmCommandRecord[] {
    return this.sent;
  }

  clearCommands(): void {
    this.sent.length = 0;
  }

  async handle(
    action: string,
    region: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
    backend: SsmBackend,
  ): Promise<SsmAnswer> {
    switch (action) {
      case 'SendCommand':
        return this.sendCommand(region, headers, body, backend);
      case 'GetCommandInvocation':
        return this.getCommandInvocation(headers, body, backend);
      case 'DescribeInstanceInformation':
        return this.describeInstanceInformation(region, body, backend);
      default:
        return backend.forward(headers, body);
    }
  }

  private async sendCommand(
    region: string,
    headers: IncomingHttpHeaders,
    body: Buffer,
    backend: SsmBackend,
  ): Promise<SsmAnswer> {
    const request = parseObject(body);
    const instanceIds = strings(request.InstanceIds);
    const online = await backend.online(region, instanceIds);
    const offline = instanceIds.filter((id) => !online.has(id));
    if (offline.length > 0) {
      return ssmError(
        400,
        'InvalidInstanceId',
        `Instances [[${offline.join(', ')}]] not in a valid state for account 123456789012`,
      );
    }
    const answer = await backend.forward(headers, body);
    if (answer.status !== 200) return answer;
    const command = (parseObject(Buffer.from(answer.body)).Command ?? {}) as Record<
      string,
      unknown
    >;
    const commandId = typeof command.CommandId === 'string' ? command.CommandId : '';
    const parameters = (request.Parameters ?? {}) as Record<string, unknown>;
    const commands = strings(parameters.commands);
    this.sent.push({
      commandId,
      region,
      documentName: typeof request.DocumentName === 'string' ? request.DocumentName : '',
      instanceIds,
      commands,
      comment: typeof request.Comment === 'string' ? request.Comment : '',
      sentAt: new Date(this.clock()).toISOString(),
    });
    const fail = this.faults.failCommands;
    const failed =
      fail && (!fail.match || commands.join('\n').includes(fail.match)) ? fail : undefined;
    this.outcomes.set(commandId, {
      ...(failed ? { failed } : {}),
      endsAt: this.clock() + (this.faults.commandDurationMs ?? 0),
    });
    return answer;
  }

  private async getCommandInvocation(
    headers: IncomingHttpHeaders,
    body: Buffer,
    backend: SsmBackend,
  ): Promise<SsmAnswer> {
    const request = parseObject(body);
    const answer = await backend.forward(headers, body);
    const outcome =
      typeof request.CommandId === 'string' ? this.outcomes.get(request.CommandId) : undefined;
    if (answer.status !== 200 || !outcome) return answer;
    const invocation = parseObject(Buffer.from(answer.body));
    if (this.clock() < outcome.endsAt) {
      Object.assign(invocation, {
        Status: 'InProgress',
        StatusDetails: 'InProgress',
        ResponseCode: -1,
      });
    } else if (outcome.failed) {
      Object.assign(invocation, {
        Status: 'Failed',
        StatusDetails: 'Failed',
        ResponseCode: outcome.failed.exitCode,
        StandardOutputContent: outcome.failed.stdout,
        StandardErrorContent: outcome.failed.stderr,
      });
    }
    return { status: 200, body: JSON.stringify(invocation) };
  }

  private async describeInstanceInformation(
    region: string,
    body: Buffer,
    backend: SsmBackend,
  ): Promise<SsmAnswer> {
    const ids = filteredIds(parseObject(body)) ?? backend.launched(region);
    const online = await backend.online(region, ids);
    const now = new Date(this.clock()).toISOString();
    const list = ids
      .filter((id) => online.has(id))
      .map((id) => ({
        InstanceId: id,
        PingStatus: 'Online',
        LastPingDateTime: Date.parse(now) / 1000,
        AgentVersion: '3.3.0.0',
        IsLatestVersion: true,
        PlatformType: 'Linux',
        PlatformName: 'Ubuntu',
        ResourceType: 'EC2Instance',
      }));
    return { status: 200, body: JSON.stringify({ InstanceInformationList: list }) };
  }
}

const failText = (iss: { path?: PropertyKey[] | undefined }) =>
  `failCommands.${issueKey(iss)} must be a string`;

const ssmFaultsSchema = onlyFields(['failCommands', 'commandDurationMs'], {
  notObject: 'SSM faults must be a JSON object',
  unknown: (key) => `unknown SSM fault "${key}" (known: failCommands, commandDurationMs)`,
}).pipe(
  z.object({
    commandDurationMs: z
      .number({ error: 'commandDurationMs must be a non-negative integer' })
      .refine((ms) => Number.isInteger(ms) && ms >= 0, {
        error: 'commandDurationMs must be a non-negative integer',
      })
      .optional(),
    // other fields of failCommands are let be, as they always were
    failCommands: z
      .object(
        {
          exitCode: z
            .number({ error: 'failCommands.exitCode must be an integer' })
            .refine(Number.isInteger, { error: 'failCommands.exitCode must be an integer' })
            .nullish(),
          match: z.string({ error: failText }).optional(),
          stdout: z.string({ error: failText }).optional(),
          stderr: z.string({ error: failText }).optional(),
        },
        { error: 'failCommands must be an object' },
      )
      .optional(),
  }),
);

/** Parses `PUT /_admin/ssm/faults`. */
export function parseSsmFaults(input: unknown): SsmFaults {
  const body = parseAdminBody(ssmFaultsSchema, input);
  const out: { -readonly [K in keyof SsmFaults]: SsmFaults[K] } = {};
  if (body.commandDurationMs !== undefined) out.commandDurationMs = body.commandDurationMs;
  const f = body.failCommands;
  if (f !== undefined) {
    out.failCommands = {
      ...(f.match !== undefined ? { match: f.match } : {}),
      exitCode: f.exitCode ?? 1,
      stdout: f.stdout ?? '',
      stderr: f.stderr ?? '',
    };
  }
  return out;
}
