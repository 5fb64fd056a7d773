import { friendlyAgo } from './ago';
import { segment } from './client';
import type { Session } from './context';
import { ApiError } from './errors';
import { columns } from './table';
import type { Model, ModelUser, Status, WhoAmI } from './types';

/** What the models list shows of each model besides its record. */
export interface ModelSummary {
  machines?: number;
  units?: number;
  access?: string;
  /** The model's latest change: its creation or a machine's last recorded change. */
  lastChange?: string;
}

/** Models asked about at once: a long list must not open a request per model all together. */
const LANES = 4;

/** The latest of the model's creation and its machines' last changes. */
export function lastChange(model: Model, status: Status): string | undefined {
  const times = [model.createdAt, ...Object.values(status.machines).map((m) => m.updatedAt)]
    .filter((t): t is string => t !== undefined && !Number.isNaN(Date.parse(t)))
    .sort((a, b) => Date.parse(a) - Date.parse(b));
  return times.at(-1);
}

/**
 * Machines, units, the caller's access and the last change of each model
 * (Juju's `models` columns): from the list itself when the server answered
 * `?summary=true`; otherwise (an older server) asked model by model, where a
 * model the caller cannot read this way (gone meanwhile, or its access list
 * refused) shows what could be read.
 */
export async function modelSummaries(
  session: Session,
  models: readonly Model[],
): Promise<Map<string, ModelSummary>> {
  // a server that answered `?summary=true` gave it all in the list: no request per model
  if (models.every((m) => m.summary !== undefined)) {
    return new Map(
      models.map((m) => {
        const { machines, units, lastChange, access } = m.summary!;
        return [m.name, { machines, units, lastChange, ...(access ? { access } : {}) }];
      }),
    );
  }
  const client = session.client();
  const out = new Map<string, ModelSummary>();
  const who = await client.get<WhoAmI>('/v1/whoami').catch(() => undefined);
  let next = 0;
  const lane = async () => {
    while (next < models.length) {
      const model = models[next++]!;
      const summary: ModelSummary = {};
      try {
        const status = await client.get<Status>(`/v1/models/${segment(model.name)}/status`);
        summary.machines = Object.keys(status.machines).length;
        summary.units = Object.values(status.applications).reduce(
          (n, a) => n + Object.keys(a.units).length,
          0,
        );
        const changed = lastChange(model, status);
        if (changed) summary.lastChange = changed;
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
      }
      if (who?.access === 'superuser') summary.access = 'admin';
      else if (who) {
        try {
          const { users } = await client.get<{ users: ModelUser[] }>(
            `/v1/models/${segment(model.name)}/access`,
          );
          const mine = users.find((u) => u.user === who.user);
          if (mine) summary.access = mine.access;
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
        }
      }
      out.set(model.name, summary);
    }
  };
  await Promise.all(Array.from({ length: Math.min(LANES, models.length) }, lane));
  return out;
}

/** `models`' table: Juju's columns, times humanised. */
export function modelsTable(
  models: readonly Model[],
  summaries: ReadonlyMap<string, ModelSummary>,
  current: string | undefined,
  now: Date,
): string {
  return columns(
    [
      'Model',
      'Cloud/Region',
      'Constraints',
      'Machines',
      'Units',
      'Access',
      'Created',
      'Last change',
    ],
    models.map((m) => {
      const s = summaries.get(m.name) ?? {};
      return [
        m.name === current ? `${m.name}*` : m.name,
        `aws/${m.region}`,
        m.constraints,
        s.machines === undefined ? '' : String(s.machines),
        s.units === undefined ? '' : String(s.units),
        s.access ?? '',
        m.createdAt ? friendlyAgo(m.createdAt, now) : '',
        s.lastChange ? friendlyAgo(s.lastChange, now) : '',
      ];
    }),
    [3, 4],
  );
}
