import { isTextMediaType, requestTime } from '../../../local/api-server';
import { localEnvironment, type Substitutions } from '../../../local/shipped';
import { templateRouter } from '../../../local/shipped-api';

describe('shipped artifacts: routing by the template', () => {
  const route = templateRouter([
    { routeKey: '$default', functionLogicalId: 'Models' },
    { routeKey: 'GET /v1/models/{model}', functionLogicalId: 'Models' },
    { routeKey: 'GET /v1/models/{model}/status', functionLogicalId: 'Status' },
    { routeKey: 'DELETE /v1/models/{model}/machines/{id}', functionLogicalId: 'Machines' },
    { routeKey: 'GET /v1/audit', functionLogicalId: 'Identity' },
    { routeKey: 'GET /v1/{anything}', functionLogicalId: 'Wrong' },
  ]);

  it('picks the route key, path parameters and the function of the matching route', () => {
    expect(route('DELETE', '/v1/models/demo/machines/7')).toEqual({
      routeKey: 'DELETE /v1/models/{model}/machines/{id}',
      pathParameters: { model: 'demo', id: '7' },
      target: 'Machines',
      rawPath: '/v1/models/demo/machines/7',
    });
    expect(route('GET', '/v1/models/demo/status')).toMatchObject({ target: 'Status' });
  });

  it('decodes the path before routing, as the HTTP API is reported to: 0%2Flxd%2F1 is three segments', () => {
    // no greedy route in this table: the decoded container id matches no {id} route
    expect(route('DELETE', '/v1/models/demo/machines/0%2Flxd%2F1')).toEqual({
      routeKey: '$default',
      target: 'Models',
      rawPath: '/v1/models/demo/machines/0/lxd/1',
    });
    expect(route('GET', '/v1/models/d%65mo/status')).toEqual({
      routeKey: 'GET /v1/models/{model}/status',
      pathParameters: { model: 'demo' },
      target: 'Status',
      rawPath: '/v1/models/demo/status',
    });
  });

  it('prefers a literal segment to a parameter, as API Gateway does', () => {
    expect(route('GET', '/v1/audit')).toEqual({
      routeKey: 'GET /v1/audit',
      pathParameters: {},
      target: 'Identity',
      rawPath: '/v1/audit',
    });
  });

  describe('greedy routes', () => {
    const greedy = templateRouter([
      { routeKey: '$default', functionLogicalId: 'Models' },
      { routeKey: 'GET /v1/models/{model}/machines/{id}', functionLogicalId: 'Machines' },
      { routeKey: 'POST /v1/models/{model}/machines/{id}/retry', functionLogicalId: 'Machines' },
      { routeKey: 'POST /v1/models/{model}/machines/{id+}', functionLogicalId: 'Greedy' },
      { routeKey: 'GET /v1/models/{model}/machines/{id+}', functionLogicalId: 'Greedy' },
      { routeKey: 'GET /v1/{rest+}', functionLogicalId: 'Wide' },
    ]);

    it('prefers a full match to a greedy one, whatever the order of the template', () => {
      expect(greedy('GET', '/v1/models/demo/machines/7')).toEqual({
        routeKey: 'GET /v1/models/{model}/machines/{id}',
        pathParameters: { model: 'demo', id: '7' },
        target: 'Machines',
        rawPath: '/v1/models/demo/machines/7',
      });
      expect(greedy('POST', '/v1/models/demo/machines/7/retry')).toMatchObject({
        routeKey: 'POST /v1/models/{model}/machines/{id}/retry',
        pathParameters: { model: 'demo', id: '7' },
      });
    });

    it('hands a decoded 0/lxd/1/retry to the greedy route, the rest of the path as its parameter', () => {
      expect(greedy('POST', '/v1/models/demo/machines/0%2Flxd%2F1/retry')).toEqual({
        routeKey: 'POST /v1/models/{model}/machines/{id+}',
        pathParameters: { model: 'demo', id: '0/lxd/1/retry' },
        target: 'Greedy',
        rawPath: '/v1/models/demo/machines/0/lxd/1/retry',
      });
      expect(greedy('GET', '/v1/models/demo/machines/0%2Flxd%2F1')).toEqual({
        routeKey: 'GET /v1/models/{model}/machines/{id+}',
        pathParameters: { model: 'demo', id: '0/lxd/1' },
        target: 'Greedy',
        rawPath: '/v1/models/demo/machines/0/lxd/1',
      });
    });

    it('prefers the longer greedy prefix, and needs at least one segment for the greedy part', () => {
      expect(greedy('GET', '/v1/models/demo/machines/0/lxd/1')).toMatchObject({ target: 'Greedy' });
      expect(greedy('GET', '/v1/anything/else')).toMatchObject({
        routeKey: 'GET /v1/{rest+}',
        pathParameters: { rest: 'anything/else' },
      });
      expect(greedy('POST', '/v1/models/demo/machines')).toMatchObject({ routeKey: '$default' });
      expect(greedy('POST', '/v1/models/demo/machines/')).toMatchObject({ routeKey: '$default' });
    });
  });

  it('sends another method, an unknown path or a malformed escape to $default', () => {
    expect(route('POST', '/v1/models/demo')).toMatchObject({
      routeKey: '$default',
      target: 'Models',
    });
    expect(route('GET', '/v2/x/y')).toMatchObject({ routeKey: '$default', target: 'Models' });
    expect(route('GET', '/v1/models/%E0%A4%A')).toEqual({
      routeKey: '$default',
      target: 'Models',
      rawPath: '/v1/models/%E0%A4%A',
    });
  });
});

describe('shipped artifacts: the template’s environment, made local', () => {
  const subs: Substitutions = {
    replace: { PROVISIONER_TABLE: 'provisioner', TEMPORAL_ADDRESS: '127.0.0.1:7233' },
    unset: { TEMPORAL_API_KEY_SECRET_ARN: 'no key locally' },
    add: { DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000' },
  };

  it('keeps literals, replaces what has a local value, leaves out what has none, adds the endpoints', () => {
    expect(
      localEnvironment(
        'Api/ModelsHandler',
        {
          NODE_OPTIONS: '--enable-source-maps',
          PROVISIONER_TABLE: { Ref: 'StateTable962DE04C' },
          TEMPORAL_ADDRESS: 'provisioner-dev.ACCOUNT.tmprl.cloud:7233',
          TEMPORAL_API_KEY_SECRET_ARN: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::AccountId' }]] },
        },
        subs,
      ),
    ).toEqual({
      NODE_OPTIONS: '--enable-source-maps',
      PROVISIONER_TABLE: 'provisioner',
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
    });
  });

  it('never sets a variable the template does not set for the function', () => {
    expect(localEnvironment('Api/StatusHandler', { NODE_OPTIONS: '--x' }, subs)).toEqual({
      NODE_OPTIONS: '--x',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
    });
  });

  it('stops at an intrinsic with no local value, naming the function and the variable', () => {
    expect(() =>
      localEnvironment('Api/IdentityHandler', { NEW_THING: { Ref: 'SomeQueue' } }, subs),
    ).toThrow(
      'Api/IdentityHandler: the template sets NEW_THING to {"Ref":"SomeQueue"}, which has no local value',
    );
  });
});

describe('HTTP API details', () => {
  it('treats text, JSON and XML media types as text, anything else as binary', () => {
    for (const t of [
      'text/plain',
      'application/json; charset=utf-8',
      'application/problem+json',
      'application/xml',
    ])
      expect({ t, text: isTextMediaType(t) }).toEqual({ t, text: true });
    for (const t of [
      undefined,
      '',
      'application/x-www-form-urlencoded',
      'application/octet-stream',
      'multipart/form-data',
    ])
      expect({ t, text: isTextMediaType(t) }).toEqual({ t, text: false });
  });

  it('writes requestContext.time as API Gateway does', () => {
    expect(requestTime(new Date(Date.UTC(2026, 10, 5, 7, 4, 9)))).toBe(
      '05/Nov/2026:07:04:09 +0000',
    );
  });
});
