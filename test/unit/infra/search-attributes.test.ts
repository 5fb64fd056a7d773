import {
  CLOUD_OPS_API_URL,
  CLOUD_OPS_API_VERSION,
  SearchAttributeConflictError,
  TemporalCloudApiError,
  cloudOpsRegistry,
  ensureSearchAttributes,
  operatorServiceRegistry,
  type OperatorService,
} from '../../../infra/search-attributes/registration';
import {
  InvalidResourcePropertiesError,
  parseProperties,
} from '../../../infra/search-attributes/handler';
import { SEARCH_ATTRIBUTE_REGISTRATIONS } from '../../../temporal/search-attributes';

const NAMESPACE = 'provisioner-dev.a1b2c';

/** A stand-in for the Cloud Ops API: a namespace with a resource version and async operations. */
class FakeCloudOps {
  searchAttributes: Record<string, string> = {};
  otherSpec = { retentionDays: 30, apiKeyAuth: { enabled: true } };
  resourceVersion = 'rv-1';
  operationPolls = 0;
  operationFinalState = 'STATE_FULFILLED';
  requests: Array<{
    method: string;
    url: string;
    headers: Record<string, string>;
    body?: unknown;
  }> = [];

  fetch = (
    url: string,
    init: { method: string; headers: Record<string, string>; body?: string },
  ) => {
    const body = init.body === undefined ? undefined : (JSON.parse(init.body) as unknown);
    this.requests.push({ method: init.method, url, headers: init.headers, body });
    const path = url.slice(CLOUD_OPS_API_URL.length);
    const reply = (status: number, json: unknown) =>
      Promise.resolve({
        ok: status < 400,
        status,
        text: () => Promise.resolve(JSON.stringify(json)),
      });
    if (init.headers.authorization !== 'Bearer the-key')
      return reply(401, { message: 'unauthorized' });
    if (path === `/cloud/namespaces/${NAMESPACE}` && init.method === 'GET') {
      return reply(200, {
        namespace: {
          namespace: NAMESPACE,
          resourceVersion: this.resourceVersion,
          spec: { ...this.otherSpec, searchAttributes: this.searchAttributes },
        },
      });
    }
    if (path === `/cloud/namespaces/${NAMESPACE}` && init.method === 'POST') {
      const update = body as {
        spec: { searchAttributes: Record<string, string> };
        resourceVersion: string;
      };
      if (update.resourceVersion !== this.resourceVersion) return reply(409, { message: 'stale' });
      this.searchAttributes = update.spec.searchAttributes;
      this.resourceVersion = 'rv-2';
      return reply(200, { asyncOperation: { id: 'op-1', state: 'STATE_PENDING' } });
    }
    if (path === '/cloud/operations/op-1') {
      this.operationPolls++;
      const state = this.operationPolls < 2 ? 'STATE_IN_PROGRESS' : this.operationFinalState;
      return reply(200, { asyncOperation: { id: 'op-1', state, failureReason: 'quota' } });
    }
    return reply(404, { message: 'not found' });
  };

  registry(apiKey = 'the-key') {
    return cloudOpsRegistry({
      namespace: NAMESPACE,
      apiKey,
      fetch: this.fetch,
      sleep: () => Promise.resolve(),
    });
  }
}

describe('ensureSearchAttributes on Temporal Cloud (Cloud Ops API)', () => {
  it('adds every attribute the workflows use, keeping the rest of the spec', async () => {
    const cloud = new FakeCloudOps();
    cloud.searchAttributes = { CustomerId: 'SEARCH_ATTRIBUTE_TYPE_KEYWORD' };
    const result = await ensureSearchAttributes(cloud.registry(), SEARCH_ATTRIBUTE_REGISTRATIONS);
    expect(result).toEqual({
      added: SEARCH_ATTRIBUTE_REGISTRATIONS.map((a) => a.name),
      present: [],
    });
    expect(cloud.searchAttributes).toEqual({
      CustomerId: 'SEARCH_ATTRIBUTE_TYPE_KEYWORD',
      ProvisionerModel: 'SEARCH_ATTRIBUTE_TYPE_KEYWORD',
      ProvisionerMachine: 'SEARCH_ATTRIBUTE_TYPE_KEYWORD',
      ProvisionerApplications: 'SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST',
      ProvisionerZone: 'SEARCH_ATTRIBUTE_TYPE_KEYWORD',
      ProvisionerStatus: 'SEARCH_ATTRIBUTE_TYPE_KEYWORD',
      ProvisionerInstanceStatus: 'SEARCH_ATTRIBUTE_TYPE_KEYWORD',
    });
    const update = cloud.requests.find((r) => r.method === 'POST')!;
    expect(update.body).toMatchObject({ resourceVersion: 'rv-1', spec: cloud.otherSpec });
    expect(update.headers['temporal-cloud-api-version']).toBe(CLOUD_OPS_API_VERSION);
    expect(cloud.operationPolls).toBe(2);
  });

  it('changes nothing when the attributes are already there', async () => {
    const cloud = new FakeCloudOps();
    await ensureSearchAttributes(cloud.registry(), SEARCH_ATTRIBUTE_REGISTRATIONS);
    cloud.requests = [];
    const again = await ensureSearchAttributes(cloud.registry(), SEARCH_ATTRIBUTE_REGISTRATIONS);
    expect(again).toEqual({
      added: [],
      present: SEARCH_ATTRIBUTE_REGISTRATIONS.map((a) => a.name),
    });
    expect(cloud.requests.map((r) => r.method)).toEqual(['GET']);
  });

  it('refuses an attribute registered with another type', async () => {
    const cloud = new FakeCloudOps();
    cloud.searchAttributes = { ProvisionerZone: 'SEARCH_ATTRIBUTE_TYPE_TEXT' };
    await expect(
      ensureSearchAttributes(cloud.registry(), SEARCH_ATTRIBUTE_REGISTRATIONS),
    ).rejects.toThrow(
      new SearchAttributeConflictError(
        'search attribute ProvisionerZone exists as Text, wanted Keyword',
      ),
    );
    expect(cloud.requests.map((r) => r.method)).toEqual(['GET']);
  });

  it('fails when the namespace update fails', async () => {
    const cloud = new FakeCloudOps();
    cloud.operationFinalState = 'STATE_FAILED';
    await expect(
      ensureSearchAttributes(cloud.registry(), SEARCH_ATTRIBUTE_REGISTRATIONS),
    ).rejects.toThrow(new TemporalCloudApiError('namespace update op-1 STATE_FAILED: quota'));
  });

  it('reports an API refusal with its status, without the key', async () => {
    const cloud = new FakeCloudOps();
    const failure = ensureSearchAttributes(
      cloud.registry('wrong-key'),
      SEARCH_ATTRIBUTE_REGISTRATIONS,
    );
    await expect(failure).rejects.toMatchObject({ name: 'TemporalCloudApiError', status: 401 });
    await expect(failure).rejects.not.toThrow(/wrong-key/);
  });
});

describe('ensureSearchAttributes on self-hosted Temporal (operator service)', () => {
  function fakeOperator(existing: Record<string, number>, addError?: Error) {
    const added: Array<Record<string, number>> = [];
    const service: OperatorService = {
      listSearchAttributes: ({ namespace }) => {
        expect(namespace).toBe(NAMESPACE);
        return Promise.resolve({ customAttributes: existing });
      },
      addSearchAttributes: ({ searchAttributes }) => {
        added.push(searchAttributes);
        return addError ? Promise.reject(addError) : Promise.resolve({});
      },
    };
    return { service, added };
  }

  it('adds the missing attributes with their indexed value types', async () => {
    const { service, added } = fakeOperator({ ProvisionerModel: 2 });
    const result = await ensureSearchAttributes(
      operatorServiceRegistry(service, NAMESPACE),
      SEARCH_ATTRIBUTE_REGISTRATIONS,
    );
    expect(result.present).toEqual(['ProvisionerModel']);
    expect(added).toEqual([
      {
        ProvisionerMachine: 2,
        ProvisionerApplications: 7,
        ProvisionerZone: 2,
        ProvisionerStatus: 2,
        ProvisionerInstanceStatus: 2,
      },
    ]);
  });

  it('treats ALREADY_EXISTS from a racing deployment as done', async () => {
    const { service } = fakeOperator({}, Object.assign(new Error('exists'), { code: 6 }));
    await expect(
      ensureSearchAttributes(
        operatorServiceRegistry(service, NAMESPACE),
        SEARCH_ATTRIBUTE_REGISTRATIONS,
      ),
    ).resolves.toMatchObject({ present: [] });
  });

  it('passes on other gRPC failures', async () => {
    const denied = Object.assign(new Error('permission denied'), { code: 7 });
    const { service } = fakeOperator({}, denied);
    await expect(
      ensureSearchAttributes(
        operatorServiceRegistry(service, NAMESPACE),
        SEARCH_ATTRIBUTE_REGISTRATIONS,
      ),
    ).rejects.toBe(denied);
  });
});

describe('parseProperties', () => {
  const valid = {
    ServiceToken: 'arn:aws:lambda:…',
    Mode: 'cloud-ops-api',
    Address: `${NAMESPACE}.tmprl.cloud:7233`,
    Namespace: NAMESPACE,
    ApiKeySecretArn:
      'arn:aws:secretsmanager:us-east-1:123456789012:secret:provisioner/dev/temporal-api-key',
    Attributes: JSON.stringify(SEARCH_ATTRIBUTE_REGISTRATIONS),
  };

  it('reads what the construct passes', () => {
    expect(parseProperties(valid)).toEqual({
      mode: 'cloud-ops-api',
      address: valid.Address,
      namespace: NAMESPACE,
      apiKeySecretArn: valid.ApiKeySecretArn,
      attributes: SEARCH_ATTRIBUTE_REGISTRATIONS,
    });
  });

  it.each([
    [{ Mode: 'tctl' }, 'Mode must be cloud-ops-api or operator-service, got tctl'],
    [{ Namespace: '' }, 'Namespace must be a non-empty string'],
    [{ Attributes: '[{"name":"X"}]' }, 'Attributes must be a JSON list of { name, cliType }'],
  ])('refuses %p', (change, message) => {
    expect(() => parseProperties({ ...valid, ...change })).toThrow(
      new InvalidResourcePropertiesError(message),
    );
  });
});
