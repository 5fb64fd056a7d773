import type { AdminState } from '../../../local/ec2-proxy/admin';
import { handleAdmin, isAdminPath } from '../../../local/ec2-proxy/admin';
import { NO_FAULTS } from '../../../local/ec2-proxy/faults';
import { NO_LATENCY } from '../../../local/ec2-proxy/latency';
import { RequestLimiter } from '../../../local/ec2-proxy/limits';
import { SsmEmulation } from '../../../local/ec2-proxy/ssm';
import { ProxyStats } from '../../../local/ec2-proxy/stats';

function state(): AdminState {
  return {
    faults: NO_FAULTS,
    latency: NO_LATENCY,
    limiter: new RequestLimiter(() => 0),
    stats: new ProxyStats(),
    isKnownAction: (a) => a === 'RunInstances',
    ssm: new SsmEmulation(() => 0),
  };
}

describe('isAdminPath', () => {
  it.each([
    ['/_admin', true],
    ['/_admin/faults', true],
    ['/_administrator', false],
    ['/', false],
  ])('%s → %s', (path, expected) => {
    expect(isAdminPath(path)).toBe(expected);
  });
});

describe('handleAdmin', () => {
  it('answers health', () => {
    expect(handleAdmin(state(), 'GET', '/_admin/health', '')).toEqual({
      status: 200,
      body: { ok: true },
    });
  });

  it('replaces, shows and clears faults', () => {
    const s = state();
    const body = {
      zones: { 'us-east-1b': 'Unsupported' },
      zoneStates: { 'us-east-1c': 'impaired' },
    };
    expect(handleAdmin(s, 'PUT', '/_admin/faults', JSON.stringify(body))).toEqual({
      status: 200,
      body: { ...body, unavailable: false, loseResponses: {} },
    });
    expect(
      handleAdmin(
        s,
        'PUT',
        '/_admin/faults',
        '{"zones":{"us-east-1a":"InsufficientInstanceCapacity"}}',
      ).body,
    ).toEqual({
      zones: { 'us-east-1a': 'InsufficientInstanceCapacity' },
      zoneStates: {},
      unavailable: false,
      loseResponses: {},
    });
    expect(handleAdmin(s, 'DELETE', '/_admin/faults', '')).toEqual({
      status: 200,
      body: { zones: {}, zoneStates: {}, unavailable: false, loseResponses: {} },
    });
    expect(handleAdmin(s, 'GET', '/_admin/faults', '').body).toEqual({
      zones: {},
      zoneStates: {},
      unavailable: false,
      loseResponses: {},
    });
  });

  it('keeps the old faults when a PUT is refused', () => {
    const s = state();
    handleAdmin(s, 'PUT', '/_admin/faults', '{"zones":{"us-east-1a":"Unsupported"}}');
    expect(handleAdmin(s, 'PUT', '/_admin/faults', '{"zones":{"us-east-1a":1}}').status).toBe(400);
    expect(s.faults.zones).toEqual({ 'us-east-1a': 'Unsupported' });
  });

  it('sets and clears limits', () => {
    const s = state();
    const limits = { runInstances: { burst: 5, refillPerSecond: 2 } };
    expect(handleAdmin(s, 'PUT', '/_admin/limits', JSON.stringify(limits))).toEqual({
      status: 200,
      body: limits,
    });
    expect(handleAdmin(s, 'GET', '/_admin/limits', '').body).toEqual(limits);
    expect(handleAdmin(s, 'DELETE', '/_admin/limits', '').body).toEqual({});
  });

  it('shows and resets stats', () => {
    const s = state();
    s.stats.call('RunInstances');
    s.stats.call('DescribeInstances', 'sweep');
    s.stats.call('DescribeInstances', 'teardown:poll');
    s.stats.call('DescribeInstances', 'sweep');
    s.stats.inject('Unsupported');
    s.stats.throttle();
    expect(handleAdmin(s, 'GET', '/_admin/stats', '').body).toEqual({
      calls: { DescribeInstances: 3, RunInstances: 1 },
      injected: { Unsupported: 1 },
      throttled: 1,
      // per caller (the worker's x-provisioner-caller header), `unnamed` without one
      byCaller: {
        sweep: { DescribeInstances: 2 },
        'teardown:poll': { DescribeInstances: 1 },
        unnamed: { RunInstances: 1 },
      },
    });
    expect(handleAdmin(s, 'DELETE', '/_admin/stats', '').body).toEqual({
      calls: {},
      injected: {},
      throttled: 0,
      byCaller: {},
    });
  });

  it.each([
    ['malformed JSON', '/_admin/faults', '{', /malformed JSON/],
    ['an unknown fault field', '/_admin/faults', '{"zone":{}}', /unknown field "zone"/],
    [
      'an unknown zone state',
      '/_admin/faults',
      '{"zoneStates":{"us-east-1c":"down"}}',
      /unknown zone state/,
    ],
    [
      'an unknown action',
      '/_admin/limits',
      '{"launch":{"burst":1,"refillPerSecond":1}}',
      /unknown field "launch"/,
    ],
  ])('answers 400 bad-request for %s', (_label, path, body, message) => {
    const answer = handleAdmin(state(), 'PUT', path, body);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      error: { code: 'bad-request', message: expect.stringMatching(message) as string },
    });
  });

  // JSON.parse makes "__proto__" an own key; zod's record skips it unchecked,
  // so each of these was once accepted as 200 setting nothing.
  it.each([
    [
      'limits',
      '/_admin/limits',
      '{"__proto__":{"burst":1,"refillPerSecond":1}}',
      'unknown field "__proto__" (expected lower-camel EC2 action names such as "runInstances")',
    ],
    [
      'latency',
      '/_admin/latency',
      '{"__proto__":5}',
      'unknown field "__proto__" (expected "default", "pendingToRunning", "runInstancesAnswer" or lower-camel EC2 action names such as "runInstances")',
    ],
    [
      'faults zones',
      '/_admin/faults',
      '{"zones":{"__proto__":"InsufficientInstanceCapacity"}}',
      '"zones": "__proto__" is not an availability zone name',
    ],
    [
      'faults loseResponses',
      '/_admin/faults',
      '{"loseResponses":{"__proto__":1}}',
      '"loseResponses": unknown field "__proto__" (expected lower-camel EC2 action names such as "runInstances")',
    ],
  ])(
    'refuses a "__proto__" key in %s with 400 and keeps what was set',
    (_label, path, body, message) => {
      const s = state();
      const answer = handleAdmin(s, 'PUT', path, body);
      expect(answer).toEqual({ status: 400, body: { error: { code: 'bad-request', message } } });
      expect(s.faults).toBe(NO_FAULTS);
      expect(s.latency).toBe(NO_LATENCY);
      expect(handleAdmin(s, 'GET', '/_admin/limits', '').body).toEqual({});
    },
  );

  it('names an earlier bad entry before a "__proto__" key, as the entries are checked in order', () => {
    const answer = handleAdmin(
      state(),
      'PUT',
      '/_admin/faults',
      '{"zones":{"us-east-1a":"not-a-code","__proto__":"Unsupported"}}',
    );
    expect(answer).toEqual({
      status: 400,
      body: {
        error: {
          code: 'bad-request',
          message: '"zones.us-east-1a": "not-a-code" is not an EC2 error code',
        },
      },
    });
  });

  it('answers 404 for an unknown admin path and 405 for a wrong method', () => {
    expect(handleAdmin(state(), 'GET', '/_admin/nope', '')).toEqual({
      status: 404,
      body: { error: { code: 'not-found', message: 'no admin resource at /_admin/nope' } },
    });
    const answer = handleAdmin(state(), 'POST', '/_admin/stats', '');
    expect(answer.status).toBe(405);
    expect(answer.allow).toBe('GET, DELETE');
    expect(handleAdmin(state(), 'constructor', '/_admin/health', '').status).toBe(405);
  });
});

describe('SSM admin resources', () => {
  it('sets, shows and clears SSM faults', () => {
    const s = state();
    const put = handleAdmin(
      s,
      'PUT',
      '/_admin/ssm/faults',
      JSON.stringify({ failCommands: { match: 'lxc launch', stderr: 'no space left' } }),
    );
    expect(put).toEqual({
      status: 200,
      body: {
        failCommands: { match: 'lxc launch', exitCode: 1, stdout: '', stderr: 'no space left' },
      },
    });
    expect(handleAdmin(s, 'GET', '/_admin/ssm/faults', '').body).toEqual(put.body);
    expect(handleAdmin(s, 'DELETE', '/_admin/ssm/faults', '')).toEqual({ status: 200, body: {} });
  });

  it('refuses unknown or malformed SSM faults with 400', () => {
    const s = state();
    expect(handleAdmin(s, 'PUT', '/_admin/ssm/faults', '{"failAll":true}')).toEqual({
      status: 400,
      body: {
        error: {
          code: 'bad-request',
          message: 'unknown SSM fault "failAll" (known: failCommands, commandDurationMs)',
        },
      },
    });
    expect(
      handleAdmin(s, 'PUT', '/_admin/ssm/faults', '{"failCommands":{"exitCode":"1"}}').body,
    ).toEqual({
      error: { code: 'bad-request', message: 'failCommands.exitCode must be an integer' },
    });
    expect(handleAdmin(s, 'PUT', '/_admin/ssm/faults', '{"commandDurationMs":-1}').status).toBe(
      400,
    );
  });

  it('lists the commands sent (none yet) and forgets them', () => {
    const s = state();
    expect(handleAdmin(s, 'GET', '/_admin/ssm/commands', '')).toEqual({
      status: 200,
      body: { commands: [] },
    });
    expect(handleAdmin(s, 'DELETE', '/_admin/ssm/commands', '').status).toBe(200);
  });
});
