/**
 * The HTTPS API's route table: the single source of truth for the local API
 * server and the CDK stack, so the deployed routes cannot drift from API.md.
 * Each route group is one Lambda (one file in functions/ exporting `handler`).
 */
import type { RouteAccess } from '../core/access';
import { PATH_PARAMETERS } from './schemas';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const ROUTE_GROUPS = [
  'models',
  'applications',
  'units',
  'machines',
  'status',
  'identity',
] as const;
export type RouteGroup = (typeof ROUTE_GROUPS)[number];

export interface Route {
  method: HttpMethod;
  /** API Gateway path template, e.g. `/v1/models/{model}`. */
  path: string;
  group: RouteGroup;
  /**
   * The access the route needs (API.md, "Access levels"), enforced for every
   * route in one place, the request pipeline (functions/http.ts). Required:
   * a route cannot be added without saying who may call it.
   */
  access: RouteAccess;
}

const none = { kind: 'none' } as const;
const login = { kind: 'controller', level: 'login' } as const;
const addModel = { kind: 'controller', level: 'add-model' } as const;
const superuser = { kind: 'controller', level: 'superuser' } as const;
const read = { kind: 'model', level: 'read' } as const;
const write = { kind: 'model', level: 'write' } as const;
const admin = { kind: 'model', level: 'admin' } as const;

/** What an unmatched request (API Gateway's `$default`) needs: a token, then an authenticated 404. */
export const DEFAULT_ROUTE_ACCESS: RouteAccess = login;

export const ROUTES = [
  // The API's own description; the models Lambda also answers `$default`, so a
  // static document needs no Lambda, role and alarms of its own.
  { method: 'GET', path: '/v1/openapi.json', group: 'models', access: login },

  { method: 'POST', path: '/v1/models', group: 'models', access: addModel },
  // lists only the models the caller can read
  { method: 'GET', path: '/v1/models', group: 'models', access: login },
  { method: 'GET', path: '/v1/models/{model}', group: 'models', access: read },
  { method: 'PATCH', path: '/v1/models/{model}', group: 'models', access: admin },
  { method: 'DELETE', path: '/v1/models/{model}', group: 'models', access: admin },
  { method: 'GET', path: '/v1/models/{model}/constraints', group: 'models', access: read },
  { method: 'PUT', path: '/v1/models/{model}/constraints', group: 'models', access: write },

  {
    method: 'POST',
    path: '/v1/models/{model}/applications',
    group: 'applications',
    access: write,
  },
  {
    method: 'GET',
    path: '/v1/models/{model}/applications/{app}',
    group: 'applications',
    access: read,
  },
  {
    method: 'DELETE',
    path: '/v1/models/{model}/applications/{app}',
    group: 'applications',
    access: write,
  },
  {
    method: 'GET',
    path: '/v1/models/{model}/applications/{app}/constraints',
    group: 'applications',
    access: read,
  },
  {
    method: 'PUT',
    path: '/v1/models/{model}/applications/{app}/constraints',
    group: 'applications',
    access: write,
  },
  { method: 'POST', path: '/v1/models/{model}/relations', group: 'applications', access: write },

  {
    method: 'POST',
    path: '/v1/models/{model}/applications/{app}/units',
    group: 'units',
    access: write,
  },
  { method: 'DELETE', path: '/v1/models/{model}/units/{app}/{n}', group: 'units', access: write },

  { method: 'POST', path: '/v1/models/{model}/machines', group: 'machines', access: write },
  { method: 'GET', path: '/v1/models/{model}/machines/{id}', group: 'machines', access: read },
  {
    method: 'DELETE',
    path: '/v1/models/{model}/machines/{id}',
    group: 'machines',
    access: write,
  },
  {
    method: 'POST',
    path: '/v1/models/{model}/machines/{id}/retry',
    group: 'machines',
    access: write,
  },
  {
    method: 'POST',
    path: '/v1/models/{model}/machines/{id}/reprovision',
    group: 'machines',
    access: write,
  },

  { method: 'GET', path: '/v1/models/{model}/status', group: 'status', access: read },

  { method: 'GET', path: '/v1/auth', group: 'identity', access: none },
  { method: 'GET', path: '/v1/whoami', group: 'identity', access: login },
  { method: 'POST', path: '/v1/users', group: 'identity', access: superuser },
  { method: 'GET', path: '/v1/users', group: 'identity', access: superuser },
  { method: 'DELETE', path: '/v1/users/{name}', group: 'identity', access: superuser },
  { method: 'PUT', path: '/v1/access/{user}', group: 'identity', access: superuser },
  { method: 'GET', path: '/v1/models/{model}/access', group: 'identity', access: read },
  {
    method: 'PUT',
    path: '/v1/models/{model}/access/{user}',
    group: 'identity',
    access: admin,
  },
  {
    method: 'DELETE',
    path: '/v1/models/{model}/access/{user}',
    group: 'identity',
    access: admin,
  },
  { method: 'GET', path: '/v1/models/{model}/audit', group: 'identity', access: admin },
  { method: 'GET', path: '/v1/audit', group: 'identity', access: superuser },
] as const satisfies readonly Route[];

/**
 * Routes the gateway needs and API.md does not name (an implementation detail
 * of the deployment): API Gateway's HTTP API is reported to decode a path
 * before routing it, so a container id sent as API.md says (`0%2Flxd%2F1`)
 * arrives as three segments and matches no `{id}` route. A greedy `{id+}`
 * route per method takes such a path; the request is then answered as the
 * documented route it stands for (`documentedRoute`), found by the
 * documented route's literal tail (`/retry`, `/reprovision`, or none). Each
 * takes its access from the routes it serves, so ROUTES stays the one place
 * access is decided. The specific routes win over these (API Gateway prefers
 * a full match to a greedy one), so single-segment ids never reach them.
 */
export const GATEWAY_ROUTES = [
  {
    method: 'GET',
    path: '/v1/models/{model}/machines/{id+}',
    group: 'machines',
    serves: ['GET /v1/models/{model}/machines/{id}'],
  },
  {
    method: 'DELETE',
    path: '/v1/models/{model}/machines/{id+}',
    group: 'machines',
    serves: ['DELETE /v1/models/{model}/machines/{id}'],
  },
  {
    method: 'POST',
    path: '/v1/models/{model}/machines/{id+}',
    group: 'machines',
    serves: [
      'POST /v1/models/{model}/machines/{id}/retry',
      'POST /v1/models/{model}/machines/{id}/reprovision',
    ],
  },
] as const satisfies readonly GatewayRoute[];

export interface GatewayRoute {
  method: HttpMethod;
  /** Ends in one greedy parameter (`{id+}`), the only place API Gateway allows one. */
  path: string;
  group: RouteGroup;
  /** The documented routes (keys of ROUTES) a request on this route may stand for. */
  serves: readonly RouteKey[];
}

export type KeyOf<R> = R extends { method: infer M extends string; path: infer P extends string }
  ? `${M} ${P}`
  : never;
/** Every route's key as a literal (`GET /v1/models/{model}`), so a table keyed by route is checked complete. */
export type RouteKey = KeyOf<(typeof ROUTES)[number]>;
/** The keys of one group's routes: what that group's Lambda must answer. */
export type GroupRouteKey<G extends RouteGroup> = KeyOf<
  Extract<(typeof ROUTES)[number], { group: G }>
>;

/** The `routeKey` API Gateway HTTP API puts in each event: `METHOD /path/{param}`. */
export function routeKey(route: Pick<Route, 'method' | 'path'>): string {
  return `${route.method} ${route.path}`;
}

/** A route's key, typed as the literal union of the table's keys. */
export function keyOf(route: (typeof ROUTES)[number]): RouteKey {
  return `${route.method} ${route.path}` as RouteKey;
}

const ACCESS_BY_KEY = new Map<string, RouteAccess>(
  ROUTES.map((r) => [routeKey(r), r.access as RouteAccess]),
);

/**
 * What a gateway route needs: the access of the documented routes it serves,
 * which must agree (checked when this module loads, so a table that would
 * let a greedy route grant more or less than its routes cannot ship).
 */
function gatewayAccess(route: GatewayRoute): RouteAccess {
  const levels = route.serves.map((key) => {
    const access = ACCESS_BY_KEY.get(key);
    if (!access) throw new Error(`gateway route ${routeKey(route)} serves unknown route ${key}`);
    return access;
  });
  const first = levels[0];
  if (!first || levels.some((a) => JSON.stringify(a) !== JSON.stringify(first))) {
    throw new Error(`gateway route ${routeKey(route)}: the routes it serves differ in access`);
  }
  return first;
}

for (const route of GATEWAY_ROUTES) ACCESS_BY_KEY.set(routeKey(route), gatewayAccess(route));

/** What the route of an event's `routeKey` needs; `$default` and unknown keys need a login. */
export function routeAccess(key: string): RouteAccess {
  return ACCESS_BY_KEY.get(key) ?? DEFAULT_ROUTE_ACCESS;
}

const GATEWAY_BY_KEY = new Map<string, GatewayRoute>(GATEWAY_ROUTES.map((r) => [routeKey(r), r]));

/** Whether a route key is one of GATEWAY_ROUTES (a greedy route API.md does not name). */
export function isGatewayRoute(key: string): boolean {
  return GATEWAY_BY_KEY.has(key);
}

/**
 * The documented route a request on a gateway route stands for, and its
 * parameters: the greedy value (already decoded, e.g. `0/lxd/1/retry`) less
 * the documented route's literal tail (`retry`) is the `{id}`. Undefined when
 * no served route's tail fits (e.g. `POST …/machines/5`): the request is then
 * answered as `$default` would answer it. The id itself is checked later with
 * the route's parameter rules, as on the documented route.
 */
export function documentedRoute(
  key: string,
  pathParameters: Record<string, string | undefined>,
): { routeKey: RouteKey; pathParameters: Record<string, string> } | undefined {
  const gateway = GATEWAY_BY_KEY.get(key);
  if (!gateway) return undefined;
  const greedy = /\{([^}]+)\+\}$/.exec(gateway.path)?.[1];
  const value =
    greedy === undefined ? undefined : (pathParameters[`${greedy}+`] ?? pathParameters[greedy]);
  if (greedy === undefined || value === undefined) return undefined;
  const segments = value.replace(/\/+$/, '').split('/');
  for (const served of gateway.serves) {
    const template = served.slice(served.indexOf(' ') + 1).split('/');
    const at = template.indexOf(`{${greedy}}`);
    const tail = template.slice(at + 1);
    if (segments.length <= tail.length) continue;
    const own = segments.slice(segments.length - tail.length);
    if (!tail.every((t, i) => t === own[i])) continue;
    const params: Record<string, string> = {};
    for (const [k, v] of Object.entries(pathParameters)) {
      if (v !== undefined && k !== greedy && k !== `${greedy}+`) params[k] = v;
    }
    params[greedy] = segments.slice(0, segments.length - tail.length).join('/');
    return { routeKey: served, pathParameters: params };
  }
  return undefined;
}

export interface RouteMatch {
  route: (typeof ROUTES)[number];
  pathParameters: Record<string, string>;
}

/**
 * Matches a concrete method and raw path against the table. Path parameters
 * are URL-decoded, as API Gateway does, so `1%2Flxd%2F0` arrives as `1/lxd/0`.
 */
export function matchRoute(method: string, rawPath: string): RouteMatch | undefined {
  const segments = pathSegments(rawPath);
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    const params = matchPath(route.path, segments);
    if (params) return { route, pathParameters: params };
  }
  return undefined;
}

export interface GatewayRouteMatch {
  route: (typeof GATEWAY_ROUTES)[number];
  pathParameters: Record<string, string>;
}

/**
 * Matches a concrete method and path against GATEWAY_ROUTES, for a request
 * no route of ROUTES matched (they win, as API Gateway prefers a full match
 * to a greedy one): the greedy parameter takes the rest of the path, decoded.
 */
export function matchGatewayRoute(method: string, rawPath: string): GatewayRouteMatch | undefined {
  const segments = pathSegments(rawPath);
  for (const route of GATEWAY_ROUTES) {
    if (route.method !== method) continue;
    const params = matchPath(route.path, segments);
    if (params) return { route, pathParameters: params };
  }
  return undefined;
}

const METHOD_ORDER: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * The methods the table has for a concrete path (GET, POST, PUT, PATCH, DELETE order): empty
 * for a path no route has (a 404), else what a `405`'s `Allow` header lists.
 */
export function allowedMethods(rawPath: string): HttpMethod[] {
  const segments = pathSegments(rawPath);
  const methods: HttpMethod[] = [];
  for (const route of ROUTES) {
    if (!methods.includes(route.method) && matchPath(route.path, segments)) {
      methods.push(route.method);
    }
  }
  // a decoded container id (`…/machines/0/lxd/1`) has the methods of the routes it stands for
  for (const route of GATEWAY_ROUTES) {
    if (methods.includes(route.method)) continue;
    const params = matchPath(route.path, segments);
    const documented = params && documentedRoute(routeKey(route), params);
    if (documented && validId(documented.pathParameters.id)) methods.push(route.method);
  }
  return methods.sort((a, b) => METHOD_ORDER.indexOf(a) - METHOD_ORDER.indexOf(b));
}

function validId(id: string | undefined): boolean {
  return id !== undefined && PATH_PARAMETERS.id.schema.safeParse(id).success;
}

function pathSegments(rawPath: string): string[] {
  return rawPath.replace(/\/+$/, '').split('/');
}

/** A route template's parameters for the path's segments, or undefined when it does not match. */
function matchPath(path: string, segments: readonly string[]): Record<string, string> | undefined {
  const template = path.split('/');
  const last = template[template.length - 1] ?? '';
  const greedy = last.endsWith('+}');
  if (greedy) {
    // `{name+}` takes one or more segments: the rest of the path, each segment decoded
    if (segments.length < template.length) return undefined;
    const rest = segments.slice(template.length - 1);
    const params = matchPath(
      template.slice(0, -1).join('/'),
      segments.slice(0, template.length - 1),
    );
    if (!params) return undefined;
    const decoded: string[] = [];
    for (const s of rest) {
      try {
        decoded.push(decodeURIComponent(s));
      } catch {
        return undefined;
      }
    }
    const value = decoded.join('/');
    if (value === '') return undefined;
    params[last.slice(1, -2)] = value;
    return params;
  }
  if (template.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < template.length; i++) {
    const t = template[i] ?? '';
    const s = segments[i] ?? '';
    if (t.startsWith('{') && t.endsWith('}')) {
      let value: string;
      try {
        value = decodeURIComponent(s);
      } catch {
        return undefined;
      }
      if (value === '') return undefined;
      params[t.slice(1, -1)] = value;
    } else if (t !== s) {
      return undefined;
    }
  }
  return params;
}
