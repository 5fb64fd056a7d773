/**
 * The HTTPS API's route table: the single source of truth for the local API
 * server and the CDK stack, so the deployed routes cannot drift from API.md.
 * Each route group is one Lambda (one file in functions/ exporting `handler`).
 */
import type { RouteAccess } from '../core/access';

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

/** What the route of an event's `routeKey` needs; `$default` and unknown keys need a login. */
export function routeAccess(key: string): RouteAccess {
  return ACCESS_BY_KEY.get(key) ?? DEFAULT_ROUTE_ACCESS;
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
  return methods.sort((a, b) => METHOD_ORDER.indexOf(a) - METHOD_ORDER.indexOf(b));
}

function pathSegments(rawPath: string): string[] {
  return rawPath.replace(/\/+$/, '').split('/');
}

/** A route template's parameters for the path's segments, or undefined when it does not match. */
function matchPath(path: string, segments: readonly string[]): Record<string, string> | undefined {
  const template = path.split('/');
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
