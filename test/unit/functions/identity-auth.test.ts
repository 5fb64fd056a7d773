import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * `GET /v1/auth` in the cloud (API.md): no token needed, the region and the
 * pool's ids, and no `endpoint` (the pool is AWS's regional one). The local
 * shape, with moto's endpoint, is checked against the stack in
 * test/integration/identity.test.ts.
 */
const CLOUD_ENV = {
  AWS_REGION: 'eu-west-2',
  PROVISIONER_TABLE: 'provisioner-test',
  TEMPORAL_ADDRESS: '127.0.0.1:1',
  PROVISIONER_USER_POOL_ID: 'eu-west-2_AbCdEf123',
  PROVISIONER_USER_POOL_CLIENT_ID: 'cliclient0123456789',
};

function get(path: string, headers: Record<string, string> = {}): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: `GET ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers,
    requestContext: {
      http: { method: 'GET', path },
      requestId: 'req-1',
    } as APIGatewayProxyEventV2['requestContext'],
    isBase64Encoded: false,
  };
}

describe('GET /v1/auth in the cloud', () => {
  const saved = { ...process.env };
  afterAll(() => {
    process.env = saved;
  });

  it('answers without a token: region, pool and client, no endpoint', async () => {
    process.env = { ...saved, ...CLOUD_ENV };
    delete process.env.PROVISIONER_COGNITO_ENDPOINT;
    const { handler } = await import('../../../functions/identity');
    const res = await handler(get('/v1/auth'));
    expect({ status: res.statusCode, body: JSON.parse(res.body ?? '') as unknown }).toEqual({
      status: 200,
      body: {
        region: 'eu-west-2',
        userPoolId: 'eu-west-2_AbCdEf123',
        clientId: 'cliclient0123456789',
      },
    });
  });
});
