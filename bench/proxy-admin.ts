/**
 * The EC2 proxy's admin API (API.md section 2) as the benchmark uses it.
 * A proxy that lacks something the benchmark would set (the latency, the
 * launched-instances bucket) is told apart, and the run says so in its notes.
 */

/** RunInstances: the issue's published bucket; the others: EC2's category buckets, one per action here. */
export const EC2_REQUEST_LIMITS = {
  runInstances: { burst: 5, refillPerSecond: 2 },
  // issue 30: EC2's published TerminateInstances and CreateTags buckets
  terminateInstances: { burst: 100, refillPerSecond: 5 },
  createTags: { burst: 100, refillPerSecond: 10 },
  describeInstances: { burst: 100, refillPerSecond: 20 },
  describeAvailabilityZones: { burst: 100, refillPerSecond: 20 },
  describeImages: { burst: 100, refillPerSecond: 20 },
  describeInstanceTypes: { burst: 100, refillPerSecond: 20 },
  describeInstanceTypeOfferings: { burst: 100, refillPerSecond: 20 },
  describeSubnets: { burst: 100, refillPerSecond: 20 },
} as const;

export const EC2_RESOURCE_LIMITS = {
  launchedInstances: { burst: 1000, refillPerSecond: 2 },
} as const;

export const EC2_LATENCY = { runInstances: 1500, default: 50, pendingToRunning: 5000 } as const;

export interface ProxyStatsSnapshot {
  calls: Record<string, number>;
  injected: Record<string, number>;
  throttled: number;
}

async function admin(
  endpoint: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${endpoint}/_admin/${path}`, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? undefined : { 'content-type': 'application/json' },
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    // keep the text
  }
  return { status: res.status, json };
}

/**
 * Sets the limits (which also refills every bucket) and the latencies.
 * Returns notes on what this proxy could not take.
 */
export async function configureProxy(endpoint: string): Promise<string[]> {
  const notes: string[] = [];
  let limits = await admin(endpoint, 'PUT', 'limits', {
    ...EC2_REQUEST_LIMITS,
    ...EC2_RESOURCE_LIMITS,
  });
  if (limits.status === 400) {
    notes.push(
      `the proxy refused the launchedInstances bucket (${JSON.stringify(limits.json)}): request buckets only`,
    );
    limits = await admin(endpoint, 'PUT', 'limits', EC2_REQUEST_LIMITS);
  }
  if (limits.status !== 200) {
    throw new Error(`PUT /_admin/limits answered ${limits.status}: ${JSON.stringify(limits.json)}`);
  }
  const latency = await admin(endpoint, 'PUT', 'latency', EC2_LATENCY);
  if (latency.status === 404) {
    notes.push(
      'the proxy has no /_admin/latency: no latency injected, instances are running at once',
    );
  } else if (latency.status !== 200) {
    throw new Error(
      `PUT /_admin/latency answered ${latency.status}: ${JSON.stringify(latency.json)}`,
    );
  }
  return notes;
}

export async function resetStats(endpoint: string): Promise<void> {
  const res = await admin(endpoint, 'DELETE', 'stats');
  if (res.status !== 200) throw new Error(`DELETE /_admin/stats answered ${res.status}`);
}

export async function readStats(endpoint: string): Promise<ProxyStatsSnapshot> {
  const res = await admin(endpoint, 'GET', 'stats');
  if (res.status !== 200) throw new Error(`GET /_admin/stats answered ${res.status}`);
  return res.json as ProxyStatsSnapshot;
}

/** Empties moto (every region); the proxy's limits are set again after, so buckets start full. */
export async function resetMoto(motoEndpoint: string): Promise<void> {
  const res = await fetch(`${motoEndpoint}/moto-api/reset`, {
    method: 'POST',
    signal: AbortSignal.timeout(60_000),
  });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`moto reset answered ${res.status}`);
}
