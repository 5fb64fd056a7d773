import type { FaultSet } from './faults';
import { AdminBadRequestError } from './admin-body';
import { NO_FAULTS, parseFaultSet } from './faults';
import type { LatencySet } from './latency';
import { NO_LATENCY, parseLatencySet } from './latency';
import type { RequestLimiter } from './limits';
import { parseLimitSet } from './limits';
import type { SsmEmulation } from './ssm';
import { parseSsmFaults } from './ssm';
import type { ProxyStats } from './stats';

/**
 * The proxy's admin API under `/_admin/` (API.md, section 2), never forwarded
 * to moto. Answers are JSON; errors use the API's error shape
 * `{ "error": { "code", "message" } }`.
 *
 * | path | GET | PUT | DELETE |
 * |---|---|---|---|
 * | `/_admin/faults` | current set | replace the set → 200 + the set | clear → 200 + the empty set |
 * | `/_admin/limits` | current limits | replace → 200 + the limits | clear → 200 + `{}` |
 * | `/_admin/latency` | current delays | replace → 200 + the delays | all 0 → 200 + the delays |
 * | `/_admin/stats` | counters since start (or last reset) | | reset → 200 + zeroed counters |
 * | `/_admin/health` | `{ "ok": true }` | | |
 * | `/_admin/ssm/commands` | `{ "commands": [...] }`, SSM commands sent | | forget them → 200 + `{ "commands": [] }` |
 * | `/_admin/ssm/faults` | current SSM faults | replace → 200 + the faults | clear → 200 + `{}` |
 */

export const ADMIN_PREFIX = '/_admin';

export function isAdminPath(pathname: string): boolean {
  return pathname === ADMIN_PREFIX || pathname.startsWith(`${ADMIN_PREFIX}/`);
}

export interface AdminState {
  faults: FaultSet;
  latency: LatencySet;
  readonly limiter: RequestLimiter;
  readonly stats: ProxyStats;
  readonly isKnownAction: (action: string) => boolean;
  /** Systems Manager's emulation (docs/api.md, "Containers on the local stack"). */
  readonly ssm: SsmEmulation;
}

export interface AdminAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly allow?: string;
}

type Handler = (state: AdminState, body: string) => AdminAnswer;
type Routes = Readonly<Record<string, Readonly<Partial<Record<string, Handler>>>>>;

export function adminError(status: number, code: string, message: string): AdminAnswer {
  return { status, body: { error: { code, message } } };
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch (err) {
    throw new AdminBadRequestError(`malformed JSON: ${(err as Error).message}`);
  }
}

const ok = (body: unknown): AdminAnswer => ({ status: 200, body });

const ROUTES: Routes = {
  '/_admin/faults': {
    GET: (s) => ok(s.faults),
    PUT: (s, body) => {
      s.faults = parseFaultSet(parseJson(body), s.isKnownAction);
      return ok(s.faults);
    },
    DELETE: (s) => {
      s.faults = NO_FAULTS;
      return ok(s.faults);
    },
  },
  '/_admin/limits': {
    GET: (s) => ok(s.limiter.current()),
    PUT: (s, body) => {
      s.limiter.set(parseLimitSet(parseJson(body), s.isKnownAction));
      return ok(s.limiter.current());
    },
    DELETE: (s) => {
      s.limiter.clear();
      return ok(s.limiter.current());
    },
  },
  '/_admin/latency': {
    GET: (s) => ok(s.latency),
    PUT: (s, body) => {
      s.latency = parseLatencySet(parseJson(body), s.isKnownAction);
      return ok(s.latency);
    },
    DELETE: (s) => {
      s.latency = NO_LATENCY;
      return ok(s.latency);
    },
  },
  '/_admin/stats': {
    GET: (s) => ok(s.stats.snapshot()),
    DELETE: (s) => {
      s.stats.reset();
      return ok(s.stats.snapshot());
    },
  },
  '/_admin/health': {
    GET: () => ok({ ok: true }),
  },
  '/_admin/ssm/commands': {
    GET: (s) => ok({ commands: s.ssm.commands() }),
    DELETE: (s) => {
      s.ssm.clearCommands();
      return ok({ commands: [] });
    },
  },
  '/_admin/ssm/faults': {
    GET: (s) => ok(s.ssm.faults),
    PUT: (s, body) => {
      s.ssm.faults = parseSsmFaults(parseJson(body));
      return ok(s.ssm.faults);
    },
    DELETE: (s) => {
      s.ssm.faults = {};
      return ok(s.ssm.faults);
    },
  },
};

export function handleAdmin(
  state: AdminState,
  method: string,
  pathname: string,
  body: string,
): AdminAnswer {
  const route = Object.hasOwn(ROUTES, pathname) ? ROUTES[pathname] : undefined;
  if (!route) return adminError(404, 'not-found', `no admin resource at ${pathname}`);
  const handler = Object.hasOwn(route, method) ? route[method] : undefined;
  if (!handler) {
    const allow = Object.keys(route).join(', ');
    return {
      ...adminError(
        405,
        'method-not-allowed',
        `${method} is not allowed on ${pathname} (${allow})`,
      ),
      allow,
    };
  }
  try {
    return handler(state, body);
  } catch (err) {
    if (err instanceof AdminBadRequestError) return adminError(400, 'bad-request', err.message);
    throw err;
  }
}
