import {
  GATEWAY_ROUTES,
  ROUTES,
  ROUTE_GROUPS,
  allowedMethods,
  documentedRoute,
  matchGatewayRoute,
  matchRoute,
  routeAccess,
  routeKey,
} from '../../../functions/routes';
import { asDocumentedRoute } from '../../../functions/http';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

describe('route table', () => {
  it('has one entry per API.md route, each in a known group, with no duplicates', () => {
    const keys = ROUTES.map(routeKey);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toHaveLength(33);
    for (const r of ROUTES) expect(ROUTE_GROUPS).toContain(r.group);
  });

  it('serves the OpenAPI document from the models Lambda (it also answers $default)', () => {
    expect(matchRoute('GET', '/v1/openapi.json')?.route.group).toBe('models');
  });

  it.each([
    ['GET', '/v1/openapi.json', 'GET /v1/openapi.json', {}],
    ['GET', '/v1/models', 'GET /v1/models', {}],
    ['GET', '/v1/models/demo', 'GET /v1/models/{model}', { model: 'demo' }],
    [
      'GET',
      '/v1/models/demo/machines/1%2Flxd%2F0',
      'GET /v1/models/{model}/machines/{id}',
      { model: 'demo', id: '1/lxd/0' },
    ],
    [
      'DELETE',
      '/v1/models/demo/units/wordpress/3',
      'DELETE /v1/models/{model}/units/{app}/{n}',
      { model: 'demo', app: 'wordpress', n: '3' },
    ],
    [
      'POST',
      '/v1/models/demo/machines/4/retry',
      'POST /v1/models/{model}/machines/{id}/retry',
      { model: 'demo', id: '4' },
    ],
    ['GET', '/v1/models/demo/status/', 'GET /v1/models/{model}/status', { model: 'demo' }],
  ])('matches %s %s', (method, path, key, params) => {
    const match = matchRoute(method, path);
    expect(match && routeKey(match.route)).toBe(key);
    expect(match?.pathParameters).toEqual(params);
  });

  it.each([
    ['PATCH', '/v1/models'],
    ['GET', '/v1/models/demo/nothing'],
    ['GET', '/v1/models//status'],
    ['GET', '/v1/models/%E0%A4%A/status'],
  ])('does not match %s %s', (method, path) => {
    expect(matchRoute(method, path)).toBeUndefined();
  });
});

describe('gateway routes: a container id the gateway decoded into several segments', () => {
  it('takes each greedy route’s access from the routes it serves: read for GET, write for the rest', () => {
    const access = (key: string) => routeAccess(key);
    expect(access('GET /v1/models/{model}/machines/{id+}')).toEqual({
      kind: 'model',
      level: 'read',
    });
    expect(access('GET /v1/models/{model}/machines/{id+}')).toEqual(
      access('GET /v1/models/{model}/machines/{id}'),
    );
    for (const key of [
      'DELETE /v1/models/{model}/machines/{id+}',
      'POST /v1/models/{model}/machines/{id+}',
    ]) {
      expect({ key, access: access(key) }).toEqual({
        key,
        access: { kind: 'model', level: 'write' },
      });
    }
    expect(access('POST /v1/models/{model}/machines/{id}/retry')).toEqual(
      access('POST /v1/models/{model}/machines/{id}/reprovision'),
    );
    for (const r of GATEWAY_ROUTES) expect(ROUTE_GROUPS).toContain(r.group);
  });

  it('leaves every single-segment id to the documented routes (they win over greedy ones)', () => {
    expect(matchRoute('POST', '/v1/models/demo/machines/0%2Flxd%2F1/retry')).toMatchObject({
      pathParameters: { model: 'demo', id: '0/lxd/1' },
      route: { path: '/v1/models/{model}/machines/{id}/retry' },
    });
    // the sources path asks the greedy routes only when no documented route matched
    expect(matchGatewayRoute('GET', '/v1/models/demo/machines/0/lxd/1')).toEqual({
      route: GATEWAY_ROUTES[0],
      pathParameters: { model: 'demo', id: '0/lxd/1' },
    });
    expect(matchGatewayRoute('GET', '/v1/models/demo/machines')).toBeUndefined();
    expect(matchGatewayRoute('PATCH', '/v1/models/demo/machines/0/lxd/1')).toBeUndefined();
  });

  it.each([
    [
      'POST /v1/models/{model}/machines/{id+}',
      '0/lxd/1/retry',
      'POST /v1/models/{model}/machines/{id}/retry',
      '0/lxd/1',
    ],
    [
      'POST /v1/models/{model}/machines/{id+}',
      '0/lxd/1/reprovision',
      'POST /v1/models/{model}/machines/{id}/reprovision',
      '0/lxd/1',
    ],
    [
      'GET /v1/models/{model}/machines/{id+}',
      '0/lxd/1',
      'GET /v1/models/{model}/machines/{id}',
      '0/lxd/1',
    ],
    [
      'DELETE /v1/models/{model}/machines/{id+}',
      '0/lxd/1',
      'DELETE /v1/models/{model}/machines/{id}',
      '0/lxd/1',
    ],
    // what the id is, the documented route's parameter rules decide (a 400 there, as on {id})
    [
      'GET /v1/models/{model}/machines/{id+}',
      '0/lxd/1/retry',
      'GET /v1/models/{model}/machines/{id}',
      '0/lxd/1/retry',
    ],
  ])('reads %s with id %s as %s, id %s', (key, value, documented, id) => {
    expect(documentedRoute(key, { model: 'demo', id: value })).toEqual({
      routeKey: documented,
      pathParameters: { model: 'demo', id },
    });
  });

  it('stands for no route when no served tail fits, or for a key that is not a gateway route', () => {
    const post = 'POST /v1/models/{model}/machines/{id+}';
    expect(documentedRoute(post, { model: 'demo', id: '5' })).toBeUndefined();
    expect(documentedRoute(post, { model: 'demo', id: '0/lxd/1/destroy' })).toBeUndefined();
    expect(documentedRoute(post, { model: 'demo', id: 'retry' })).toBeUndefined();
    expect(documentedRoute('GET /v1/models/{model}/machines/{id}', { id: '5' })).toBeUndefined();
  });

  it('answers a request on a greedy route as the documented route, or as $default', () => {
    const event = (method: string, path: string) => {
      const match = matchGatewayRoute(method, path)!;
      return {
        version: '2.0',
        routeKey: routeKey(match.route),
        rawPath: path,
        rawQueryString: '',
        headers: {},
        pathParameters: match.pathParameters,
        isBase64Encoded: false,
      } as unknown as APIGatewayProxyEventV2;
    };
    const retry = asDocumentedRoute(event('POST', '/v1/models/demo/machines/0/lxd/1/retry'));
    expect([retry.routeKey, retry.pathParameters, retry.rawPath]).toEqual([
      'POST /v1/models/{model}/machines/{id}/retry',
      { model: 'demo', id: '0/lxd/1' },
      '/v1/models/demo/machines/0/lxd/1/retry',
    ]);
    const bare = asDocumentedRoute(event('POST', '/v1/models/demo/machines/5'));
    expect([bare.routeKey, bare.pathParameters]).toEqual(['$default', undefined]);
    // $default then answers with the methods the path has, as without the greedy route
    expect(allowedMethods('/v1/models/demo/machines/5')).toEqual(['GET', 'DELETE']);
    expect(allowedMethods('/v1/models/demo/machines/0/lxd/1')).toEqual(['GET', 'DELETE']);
    // `0/lxd/1/retry` is no machine id: only the retry route has this path
    expect(allowedMethods('/v1/models/demo/machines/0/lxd/1/retry')).toEqual(['POST']);
    expect(allowedMethods('/v1/models/demo/machines/0/lxd/x')).toEqual([]);
    const plain = event('GET', '/v1/models/demo/machines/0/lxd/1');
    expect(asDocumentedRoute({ ...plain, routeKey: 'GET /v1/models/{model}' })).toEqual({
      ...plain,
      routeKey: 'GET /v1/models/{model}',
    });
  });
});
