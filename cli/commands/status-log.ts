import type { Command } from 'commander';
import { segment } from '../client';
import type { Session } from '../context';
import { ApiError, UsageError } from '../errors';
import { columns } from '../table';
import type { AuditEntry, AuditPage, Machine, Status } from '../types';
import {
  count,
  printStructured,
  withFormat,
  withModel,
  type Format,
  type ModelOpts,
} from './common';

const MACHINE_ID = /^\d+(\/lxd\/\d+)?$/;
const UNIT_NAME = /^([a-z][a-z0-9-]*)\/(\d+)$/;

/** One line of `show-status-log`: Juju's columns. */
export interface StatusLogEntry {
  time: string;
  type: string;
  status: string;
  message: string;
}

/** The verb a person typed for an audited request on a machine or unit path. */
function requestVerb(method: string, path: string): string {
  if (method === 'POST' && path.endsWith('/retry')) return 'retry-provisioning';
  if (method === 'POST' && path.endsWith('/reprovision')) return 'reprovision-machine';
  if (method === 'DELETE' && path.includes('/units/')) return 'remove-unit';
  if (method === 'DELETE') return 'remove-machine';
  return `${method} ${path}`;
}

/** Whether an audited request's path names the machine or unit (`0/lxd/1` travels encoded). */
export function namesEntity(path: string, kind: 'machine' | 'unit', id: string): boolean {
  const decoded = (() => {
    try {
      return decodeURIComponent(path.split('?')[0] ?? path);
    } catch {
      return path;
    }
  })();
  const prefix = kind === 'machine' ? `/machines/${id}` : `/units/${id}`;
  const at = decoded.indexOf(prefix);
  if (at < 0) return false;
  const rest = decoded.slice(at + prefix.length);
  return rest === '' || (rest.startsWith('/') && !/^\/lxd\//.test(rest));
}

/**
 * What the provisioner has stored about a machine's status over time: when
 * it was added, the requests that named it (the model's audit), when its
 * instance state was recorded, and its last change with the status and
 * message it has now. Every step in between is in the machine's workflow
 * history (the Temporal UI), not here.
 */
export function machineStatusLog(machine: Machine, audit: AuditEntry[]): StatusLogEntry[] {
  const rows: StatusLogEntry[] = [];
  if (machine.createdAt)
    rows.push({
      time: machine.createdAt,
      type: 'juju-machine',
      status: 'pending',
      message: 'added',
    });
  for (const e of audit)
    rows.push({
      time: e.time,
      type: 'request',
      status: String(e.status),
      message: `${requestVerb(e.method, e.path)} by ${e.user}`,
    });
  if (machine.instanceStatusAt && machine.instanceStatus)
    rows.push({
      time: machine.instanceStatusAt,
      type: 'machine',
      status: machine.instanceStatus,
      message: machine.instanceId ? `instance ${machine.instanceId}` : '',
    });
  if (machine.updatedAt)
    rows.push({
      time: machine.updatedAt,
      type: 'juju-machine',
      status: machine.status,
      message: machine.message,
    });
  // oldest first, as Juju prints it; a tie keeps the order above (added, request, instance, now)
  return rows
    .map((r, i) => ({ r, i }))
    .sort((a, b) => Date.parse(a.r.time) - Date.parse(b.r.time) || a.i - b.i)
    .map(({ r }) => r);
}

/** Go's short month names, as Juju prints them (ICU's en-GB gives `Sept`). */
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `2026-11-25T17:03:04.123Z` → `25 Nov 2026 17:03:04Z`, Juju's status-log time. */
export function statusLogTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const month = MONTHS[d.getUTCMonth()];
  const day = String(d.getUTCDate()).padStart(2, '0');
  return `${day} ${month} ${d.getUTCFullYear()} ${d.toISOString().slice(11, 19)}Z`;
}

/** The model's audit entries naming the entity; undefined when the caller may not read the audit. */
async function auditNaming(
  session: Session,
  model: string,
  kind: 'machine' | 'unit',
  id: string,
): Promise<AuditEntry[] | undefined> {
  try {
    const page = await session
      .client()
      .get<AuditPage>(`/v1/models/${segment(model)}/audit?limit=500`);
    return page.entries.filter((e) => namesEntity(e.path, kind, id));
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) return undefined;
    throw err;
  }
}

export function registerStatusLogCommand(program: Command, session: Session): void {
  withFormat(
    withModel(
      program
        .command('show-status-log')
        .description(
          'Output past statuses for a machine or unit, as far as the provisioner stores them.',
        )
        .argument('<entity>', 'a machine id (3, 0/lxd/1) or a unit name (wordpress/0)')
        .option('-n <n>', 'show only the last n entries', count(1)),
    ),
    ['tabular', 'json', 'yaml'],
    'tabular',
  ).action(async (entity: string, opts: ModelOpts & { format: Format; n?: number }) => {
    const unit = UNIT_NAME.exec(entity);
    if (!unit && !MACHINE_ID.test(entity))
      throw new UsageError(`invalid entity "${entity}": expected a machine id or a unit name`);
    const model = session.model(opts.model);
    const client = session.client();
    let machineId = entity;
    if (unit) {
      const status = await client.get<Status>(`/v1/models/${segment(model)}/status`);
      const found = status.applications[unit[1]!]?.units[entity];
      if (!found) throw new ApiError(404, 'not-found', `unit "${entity}" not found`);
      machineId = found.machine;
    }
    const machine = await client.get<Machine>(
      `/v1/models/${segment(model)}/machines/${segment(machineId)}`,
    );
    const audit = await auditNaming(session, model, 'machine', machineId);
    const unitAudit = unit ? await auditNaming(session, model, 'unit', entity) : [];
    let rows = machineStatusLog(machine, [...(audit ?? []), ...(unitAudit ?? [])]);
    if (opts.n !== undefined) rows = rows.slice(-opts.n);
    if (opts.format !== 'tabular') {
      printStructured(session, opts.format, rows);
    } else {
      session.out(
        `${columns(
          ['Time', 'Type', 'Status', 'Message'],
          rows.map((r) => [statusLogTime(r.time), r.type, r.status, r.message]),
        )}\n`,
      );
    }
    const notes = [
      unit ? `unit ${entity} is on machine ${machineId}: its status follows the machine's` : '',
      "built from the machine's record (added, instance state, last change)" +
        (audit ? " and the model's audit (requests naming it)" : ''),
      audit ? '' : "the model's audit needs admin access: the requests are not shown",
      "every step in between is in the machine's workflow history (Temporal UI)",
    ].filter(Boolean);
    session.info(notes.map((n) => `NOTE ${n}\n`).join(''));
  });
}
