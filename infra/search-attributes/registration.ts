/**
 * Registers the workflows' custom search attributes on a Temporal namespace,
 * idempotently: attributes already there with the wanted type are left alone,
 * one already there with another type is an error (Temporal cannot change a
 * type), and nothing is ever removed.
 */

/** A search attribute as `SEARCH_ATTRIBUTE_REGISTRATIONS` spells it (`Keyword`, `KeywordList`, …). */
export interface SearchAttributeSpec {
  name: string;
  cliType: string;
}

/** A namespace's custom search attributes: read them, add some. */
export interface SearchAttributeRegistry {
  /** Name → CLI type of the custom attributes the namespace has. */
  list(): Promise<Map<string, string>>;
  add(attributes: readonly SearchAttributeSpec[]): Promise<void>;
}

export class SearchAttributeConflictError extends Error {
  override readonly name = 'SearchAttributeConflictError';
}

export class UnsupportedSearchAttributeTypeError extends Error {
  override readonly name = 'UnsupportedSearchAttributeTypeError';
}

export class TemporalCloudApiError extends Error {
  override readonly name = 'TemporalCloudApiError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface RegistrationResult {
  added: string[];
  present: string[];
}

export async function ensureSearchAttributes(
  registry: SearchAttributeRegistry,
  wanted: readonly SearchAttributeSpec[],
): Promise<RegistrationResult> {
  const existing = await registry.list();
  const conflicts = wanted.filter((w) => {
    const type = existing.get(w.name);
    return type !== undefined && type !== w.cliType;
  });
  if (conflicts.length > 0) {
    throw new SearchAttributeConflictError(
      conflicts
        .map(
          (c) =>
            `search attribute ${c.name} exists as ${existing.get(c.name)}, wanted ${c.cliType}`,
        )
        .join('; '),
    );
  }
  const missing = wanted.filter((w) => !existing.has(w.name));
  if (missing.length > 0) await registry.add(missing);
  return {
    added: missing.map((m) => m.name),
    present: wanted.filter((w) => existing.has(w.name)).map((w) => w.name),
  };
}

// --- Temporal Cloud: Cloud Ops API (HTTP) --------------------------------------------------------

export const CLOUD_OPS_API_URL = 'https://saas-api.tmprl.cloud';
/**
 * Cloud Ops API version this code speaks (namespace `spec.searchAttributes`
 * needs ≥ v0.3.0). The backend uses the stated version to mutate resources
 * safely (temporalio/api-cloud README), so spec fields newer than it are not
 * ours to round-trip.
 */
export const CLOUD_OPS_API_VERSION = 'v0.4.0';

const CLOUD_TYPES: Record<string, string> = {
  Text: 'SEARCH_ATTRIBUTE_TYPE_TEXT',
  Keyword: 'SEARCH_ATTRIBUTE_TYPE_KEYWORD',
  Int: 'SEARCH_ATTRIBUTE_TYPE_INT',
  Double: 'SEARCH_ATTRIBUTE_TYPE_DOUBLE',
  Bool: 'SEARCH_ATTRIBUTE_TYPE_BOOL',
  Datetime: 'SEARCH_ATTRIBUTE_TYPE_DATETIME',
  KeywordList: 'SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST',
};

function cloudType(cliType: string): string {
  const type = CLOUD_TYPES[cliType];
  if (!type)
    throw new UnsupportedSearchAttributeTypeError(`unsupported search attribute type ${cliType}`);
  return type;
}

function cliTypeFromCloud(type: string): string {
  return Object.keys(CLOUD_TYPES).find((k) => CLOUD_TYPES[k] === type) ?? type;
}

type Fetch = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
) => Promise<{
  ok: boolean;
  status: number;
  text(): Promise<string>;
}>;

interface CloudNamespace {
  resourceVersion?: string;
  spec?: { searchAttributes?: Record<string, string>; customSearchAttributes?: unknown } & Record<
    string,
    unknown
  >;
}

interface AsyncOperation {
  id?: string;
  state?: string;
  failureReason?: string;
}

export interface CloudOpsRegistryOptions {
  namespace: string;
  apiKey: string;
  fetch: Fetch;
  baseUrl?: string;
  sleep?: (ms: number) => Promise<void>;
  /** How long to wait for the namespace update to finish. */
  timeoutMs?: number;
  pollIntervalMs?: number;
}

/**
 * Temporal Cloud keeps search attributes in the namespace spec: read it, post
 * it back with the new attributes and the resource version read, and wait for
 * the asynchronous operation to finish.
 */
export function cloudOpsRegistry(options: CloudOpsRegistryOptions): SearchAttributeRegistry {
  const baseUrl = options.baseUrl ?? CLOUD_OPS_API_URL;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const headers = {
    authorization: `Bearer ${options.apiKey}`,
    'temporal-cloud-api-version': CLOUD_OPS_API_VERSION,
    'content-type': 'application/json',
  };
  const nsPath = `/cloud/namespaces/${encodeURIComponent(options.namespace)}`;

  async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await options.fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) {
      throw new TemporalCloudApiError(
        `Temporal Cloud Ops API ${method} ${path} answered ${res.status}: ${text.slice(0, 500)}`,
        res.status,
      );
    }
    return (text ? JSON.parse(text) : {}) as T;
  }

  async function getNamespace(): Promise<CloudNamespace> {
    const out = await call<{ namespace?: CloudNamespace }>('GET', nsPath);
    if (!out.namespace) throw new TemporalCloudApiError(`namespace ${options.namespace} not found`);
    return out.namespace;
  }

  async function waitFor(operation: AsyncOperation | undefined): Promise<void> {
    const deadline = Date.now() + (options.timeoutMs ?? 240_000);
    let op = operation;
    // States are `STATE_FULFILLED`, `STATE_FAILED`, …; match on the suffix to accept older spellings too.
    const state = () => (op?.state ?? '').toUpperCase();
    while (op?.id && !state().endsWith('FULFILLED')) {
      if (state().endsWith('FAILED') || state().endsWith('CANCELLED')) {
        throw new TemporalCloudApiError(
          `namespace update ${op.id} ${op.state}: ${op.failureReason ?? 'no reason given'}`,
        );
      }
      if (Date.now() > deadline) {
        throw new TemporalCloudApiError(
          `namespace update ${op.id} still ${op.state} at the deadline`,
        );
      }
      await sleep(options.pollIntervalMs ?? 3000);
      const out = await call<{ asyncOperation?: AsyncOperation }>(
        'GET',
        `/cloud/operations/${encodeURIComponent(op.id)}`,
      );
      op = out.asyncOperation;
    }
  }

  return {
    async list() {
      const ns = await getNamespace();
      const attributes = ns.spec?.searchAttributes ?? {};
      return new Map(
        Object.entries(attributes).map(([name, type]) => [name, cliTypeFromCloud(type)]),
      );
    },
    async add(attributes) {
      const ns = await getNamespace();
      const { customSearchAttributes: _deprecated, ...spec } = ns.spec ?? {};
      const searchAttributes = { ...(spec.searchAttributes ?? {}) };
      for (const a of attributes) searchAttributes[a.name] = cloudType(a.cliType);
      const out = await call<{ asyncOperation?: AsyncOperation }>('POST', nsPath, {
        spec: { ...spec, searchAttributes },
        resourceVersion: ns.resourceVersion,
      });
      await waitFor(out.asyncOperation);
    },
  };
}

// --- Self-hosted Temporal: OperatorService (gRPC) ------------------------------------------------

/** Temporal's `IndexedValueType` enum values (temporal/api/enums/v1/common.proto). */
const INDEXED_VALUE_TYPES: Record<string, number> = {
  Text: 1,
  Keyword: 2,
  Int: 3,
  Double: 4,
  Bool: 5,
  Datetime: 6,
  KeywordList: 7,
};

/** gRPC status ALREADY_EXISTS: another deployment registered it meanwhile. */
const GRPC_ALREADY_EXISTS = 6;

/** The slice of `Connection.operatorService` this code calls. */
export interface OperatorService {
  listSearchAttributes(req: {
    namespace: string;
  }): Promise<{ customAttributes?: Record<string, number> | null }>;
  addSearchAttributes(req: {
    namespace: string;
    searchAttributes: Record<string, number>;
  }): Promise<unknown>;
}

export function operatorServiceRegistry(
  service: OperatorService,
  namespace: string,
): SearchAttributeRegistry {
  return {
    async list() {
      const out = await service.listSearchAttributes({ namespace });
      return new Map(
        Object.entries(out.customAttributes ?? {}).map(([name, value]) => [
          name,
          Object.keys(INDEXED_VALUE_TYPES).find((k) => INDEXED_VALUE_TYPES[k] === value) ??
            String(value),
        ]),
      );
    },
    async add(attributes) {
      const searchAttributes: Record<string, number> = {};
      for (const a of attributes) {
        const value = INDEXED_VALUE_TYPES[a.cliType];
        if (value === undefined) {
          throw new UnsupportedSearchAttributeTypeError(
            `unsupported search attribute type ${a.cliType}`,
          );
        }
        searchAttributes[a.name] = value;
      }
      try {
        await service.addSearchAttributes({ namespace, searchAttributes });
      } catch (err) {
        if ((err as { code?: unknown } | null)?.code !== GRPC_ALREADY_EXISTS) throw err;
      }
    },
  };
}
