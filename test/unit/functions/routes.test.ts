import { ROUTES, ROUTE_GROUPS, matchRoute, routeKey } from '../../../functions/routes';

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
