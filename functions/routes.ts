/**
 * The HTTPS API's route table: the single source of truth for the local API
 * server and the CDK stack, so the deployed routes cannot drift from API.md.
 * Each route group is one Lambda (one file in functions/ exporting `handler`).
 */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const ROUTE_GROUPS = ['models', 'applications', 'units', 'machines', 'status'] as const;
export type RouteGroup = (typeof ROUTE_GROUPS)[number];

export interface Route {
  method: HttpMethod;
  /** API Gateway path template, e.g. `/v1/models/{model}`. */
  path: string;
  group: RouteGroup;
}

export const ROUTES = [
  // The API's own description; the models Lambda also answers `$default`, so a
  // static document needs no Lambda, role and alarms of its own.
  { method: 'GET', path: '/v1/openapi.json', group: 'models' },

  { method: 'POST', path: '/v1/models', group: 'models' },
  { method: 'GET', path: '/v1/models', group: 'models' },
  { method: 'GET', path: '/v1/models/{model}', group: 'models' },
  { method: 'PATCH', path: '/v1/models/{model}', group: 'models' },
  { method: 'DELETE', path: '/v1/models/{model}', group: 'models' },
  { method: 'GET', path: '/v1/models/{model}/constraints', group: 'models' },
  { method: 'PUT', path: '/v1/models/{model}/constraints', group: 'models' },

  { method: 'POST', path: '/v1/models/{model}/applications', group: 'applications' },
  { method: 'GET', path: '/v1/models/{model}/applications/{app}', group: 'applications' },
  { method: 'DELETE', path: '/v1/models/{model}/applications/{app}', group: 'applications' },
  {
    method: 'GET',
    path: '/v1/models/{model}/applications/{app}/constraints',
    group: 'applications',
  },
  {
    method: 'PUT',
    path: '/v1/models/{model}/applications/{app}/constraints',
    group: 'applications',
  },
  { method: 'POST', path: '/v1/models/{model}/relations', group: 'applications' },

  { method: 'POST', path: '/v1/models/{model}/applications/{app}/units', group: 'units' },
  { method: 'DELETE', path: '/v1/models/{model}/units/{app}/{n}', group: 'units' },

  { method: 'POST', path: '/v1/models/{model}/machines', group: 'machines' },
  { method: 'GET', path: '/v1/models/{model}/machines/{id}', group: 'machines' },
  { method: 'DELETE', path: '/v1/models/{model}/machines/{id}', group: 'machines' },
  { method: 'POST', path: '/v1/models/{model}/machines/{id}/retry', group: 'machines' },
  { method: 'POST', path: '/v1/models/{model}/machines/{id}/reprovision', group: 'machines' },

  { method: 'GET', path: '/v1/models/{model}/status', group: 'status' },
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

export interface RouteMatch {
  route: (typeof ROUTES)[number];
  pathParameters: Record<string, string>;
}

/**
 * Matches a concrete method and raw path against the table. Path parameters
 * are URL-decoded, as API Gateway does, so `1%2Flxd%2F0` arrives as `1/lxd/0`.
 */
export function matchRoute(method: string, rawPath: string): RouteMatch | undefined {
  const segments = rawPath.replace(/\/+$/, '').split('/');
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    const template = route.path.split('/');
    if (template.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < template.length && ok; i++) {
      const t = template[i] ?? '';
      const s = segments[i] ?? '';
      if (t.startsWith('{') && t.endsWith('}')) {
        let value: string;
        try {
          value = decodeURIComponent(s);
        } catch {
          ok = false;
          break;
        }
        if (value === '') ok = false;
        params[t.slice(1, -1)] = value;
      } else if (t !== s) {
        ok = false;
      }
    }
    if (ok) return { route, pathParameters: params };
  }
  return undefined;
}
