import type { LaunchRecord } from '../../../local/ec2-proxy/idempotency';
import {
  callerScope,
  decideReplay,
  IdempotencyStore,
  idempotencyKey,
  launchFingerprint,
} from '../../../local/ec2-proxy/idempotency';

const scope = { principal: 'test|', region: 'us-east-1' };

const request: Array<[string, string]> = [
  ['Action', 'RunInstances'],
  ['Version', '2016-11-15'],
  ['ImageId', 'ami-03cf127a'],
  ['InstanceType', 't3.small'],
  ['MinCount', '1'],
  ['MaxCount', '1'],
  ['Placement.AvailabilityZone', 'us-east-1a'],
  ['ClientToken', 'tok-1'],
];

function record(fingerprint: string, id = 'i-1'): LaunchRecord {
  return { fingerprint, reservationId: 'r-1', instanceIds: [id], responseBody: '<x/>' };
}

describe('callerScope', () => {
  it('reads access key and Region from the SigV4 credential scope, and moto’s account header', () => {
    expect(
      callerScope({
        authorization:
          'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/eu-west-1/ec2/aws4_request, SignedHeaders=host, Signature=abc',
        'x-moto-account-id': '111122223333',
      }),
    ).toEqual({ principal: 'AKIDEXAMPLE|111122223333', region: 'eu-west-1' });
  });

  it('defaults to us-east-1, as moto does, when unsigned', () => {
    expect(callerScope({})).toEqual({ principal: '|', region: 'us-east-1' });
  });
});

describe('idempotencyKey', () => {
  it('is zonal when the request names a zone and regional otherwise', () => {
    const a = idempotencyKey(scope, 'us-east-1a', 'tok');
    const b = idempotencyKey(scope, 'us-east-1b', 'tok');
    const regional = idempotencyKey(scope, undefined, 'tok');
    expect(new Set([a, b, regional]).size).toBe(3);
    expect(idempotencyKey(scope, 'us-east-1a', 'tok')).toBe(a);
  });

  it('separates regions, callers and tokens (tokens are case-sensitive)', () => {
    const base = idempotencyKey(scope, undefined, 'tok');
    expect(idempotencyKey({ ...scope, region: 'eu-west-1' }, undefined, 'tok')).not.toBe(base);
    expect(idempotencyKey({ ...scope, principal: 'other|' }, undefined, 'tok')).not.toBe(base);
    expect(idempotencyKey(scope, undefined, 'TOK')).not.toBe(base);
  });
});

describe('launchFingerprint', () => {
  const fp = launchFingerprint(request);

  it('ignores parameter order, the token, the API version and the zone', () => {
    const reordered = [...request].reverse();
    expect(launchFingerprint(reordered)).toBe(fp);
    const other = request.map(([k, v]): [string, string] =>
      k === 'ClientToken'
        ? [k, 'tok-2']
        : k === 'Version'
          ? [k, '2015-01-01']
          : k === 'Placement.AvailabilityZone'
            ? [k, 'us-east-1b']
            : [k, v],
    );
    expect(launchFingerprint(other)).toBe(fp);
  });

  it('changes with any launch parameter', () => {
    const bigger = request.map(([k, v]): [string, string] =>
      k === 'InstanceType' ? [k, 't3.large'] : [k, v],
    );
    expect(launchFingerprint(bigger)).not.toBe(fp);
    expect(
      launchFingerprint([...request, ['TagSpecification.1.ResourceType', 'instance']]),
    ).not.toBe(fp);
    expect(launchFingerprint([...request, ['SubnetId', 'subnet-1']])).not.toBe(fp);
  });
});

describe('decideReplay', () => {
  it('replays the same parameters and refuses others', () => {
    expect(decideReplay(record('a'), 'a')).toBe('replay');
    expect(decideReplay(record('a'), 'b')).toBe('mismatch');
  });
});

describe('IdempotencyStore', () => {
  it('makes the first caller the owner and later callers see its record', async () => {
    const store = new IdempotencyStore();
    const first = await store.acquire('k');
    expect(first.kind).toBe('owner');
    if (first.kind !== 'owner') return;
    first.release(record('fp'));
    await expect(store.acquire('k')).resolves.toEqual({ kind: 'stored', record: record('fp') });
    expect(store.size).toBe(1);
  });

  it('makes a concurrent duplicate wait for the launch in flight', async () => {
    const store = new IdempotencyStore();
    const first = await store.acquire('k');
    let secondSettled = false;
    const second = store.acquire('k').then((a) => {
      secondSettled = true;
      return a;
    });
    await new Promise((r) => setImmediate(r));
    expect(secondSettled).toBe(false);
    if (first.kind === 'owner') first.release(record('fp', 'i-first'));
    await expect(second).resolves.toEqual({ kind: 'stored', record: record('fp', 'i-first') });
  });

  it('hands ownership to a waiter when the launch failed, and keeps no token', async () => {
    const store = new IdempotencyStore();
    const first = await store.acquire('k');
    const second = store.acquire('k');
    if (first.kind === 'owner') first.release(undefined);
    const next = await second;
    expect(next.kind).toBe('owner');
    expect(store.size).toBe(0);
  });

  it('keeps different keys independent', async () => {
    const store = new IdempotencyStore();
    const a = await store.acquire('a');
    const b = await store.acquire('b');
    expect([a.kind, b.kind]).toEqual(['owner', 'owner']);
  });

  it('forgets a token on request', async () => {
    const store = new IdempotencyStore();
    const first = await store.acquire('k');
    if (first.kind === 'owner') first.release(record('fp'));
    store.forget('k');
    expect((await store.acquire('k')).kind).toBe('owner');
  });

  it('ignores a second release', async () => {
    const store = new IdempotencyStore();
    const first = await store.acquire('k');
    if (first.kind !== 'owner') throw new Error('expected owner');
    first.release(record('fp'));
    first.release(undefined);
    expect((await store.acquire('k')).kind).toBe('stored');
  });
});
