import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, optionalEnv, positiveIntEnv } from '../config/env';
import { assertPortFree, freePort, type ManagedProcess } from './processes';
import { PROJECT_ROOT, startStack, type RunningStack } from './stack';
import { ToolchainError } from './toolchain';

/**
 * `npm start`: the whole stack on loopback until Ctrl-C. Ports and token come
 * from the environment (API.md, "Local stack"); when ready it writes
 * `.provisioner/stack.json` and prints the endpoints.
 */
function portFromAddress(address: string, variable: string): number {
  const match = /:(\d+)$/.exec(address);
  if (!match) throw new ConfigError(`environment variable ${variable}: "${address}" has no port`);
  return Number(match[1]);
}

async function main(): Promise<void> {
  const stateDir = join(PROJECT_ROOT, '.provisioner');
  const stackFile = join(stateDir, 'stack.json');
  rmSync(stackFile, { force: true });

  const ports = {
    api: positiveIntEnv('PROVISIONER_API_PORT', 3000),
    temporal: portFromAddress(
      optionalEnv('TEMPORAL_ADDRESS', '127.0.0.1:7233'),
      'TEMPORAL_ADDRESS',
    ),
    temporalUi: positiveIntEnv('TEMPORAL_UI_PORT', 8233),
    dynamodb: portFromAddress(
      optionalEnv('DYNAMODB_ENDPOINT', 'http://127.0.0.1:8000'),
      'DYNAMODB_ENDPOINT',
    ),
    ec2: portFromAddress(optionalEnv('EC2_ENDPOINT', 'http://127.0.0.1:5000'), 'EC2_ENDPOINT'),
    moto: await freePort(),
  };
  await assertPortFree(ports.api, 'API', 'PROVISIONER_API_PORT');
  await assertPortFree(ports.temporal, 'Temporal frontend', 'TEMPORAL_ADDRESS');
  await assertPortFree(ports.temporalUi, 'Temporal Web UI', 'TEMPORAL_UI_PORT');
  await assertPortFree(ports.dynamodb, 'DynamoDB Local', 'DYNAMODB_ENDPOINT');
  await assertPortFree(ports.ec2, 'EC2 endpoint', 'EC2_ENDPOINT');

  const token = process.env.PROVISIONER_API_TOKEN || randomBytes(24).toString('base64url');
  console.log(
    'starting the local stack (first run installs the Temporal CLI, moto and DynamoDB Local)…',
  );
  const started: ManagedProcess[] = [];
  let stopping = false;
  // Children run in their own process groups, so a terminal's Ctrl-C reaches
  // only this process: it must take them down whatever way it ends.
  const killAll = () => {
    for (const p of started) {
      if (p.child.pid === undefined) continue;
      try {
        process.kill(-p.child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  process.on('exit', killAll);
  const stop = async (code: number) => {
    if (stopping) {
      // a second Ctrl-C: no more waiting
      killAll();
      process.exit(code || 130);
    }
    stopping = true;
    console.log('\nstopping…');
    rmSync(stackFile, { force: true });
    await Promise.all(started.map((p) => p.stop()));
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  const stack: RunningStack = await startStack({
    track: (p) => started.push(p),
    ports,
    token,
    dataDir: join(stateDir, 'data'),
    region: optionalEnv('AWS_REGION', 'us-east-1'),
    // more than one worker polling the one task queue, as prod runs two
    workers: positiveIntEnv('PROVISIONER_WORKERS', 1),
    log: (line) => console.log(line),
  });
  if (stopping) return;
  for (const p of stack.processes) {
    void p.exited.then((code) => {
      if (!stopping) {
        console.error(`${p.name} exited unexpectedly (${String(code)}); see ${p.logFile}`);
        void stop(1);
      }
    });
  }
  const { motoEndpoint: _moto, tableName: _table, ...published } = stack.info;
  mkdirSync(stateDir, { recursive: true });
  // it holds the API token: readable by this user only
  writeFileSync(stackFile, `${JSON.stringify(published, null, 2)}\n`, { mode: 0o600 });
  const i = stack.info;
  console.log(`
The provisioner is up (Ctrl-C stops everything):
  API               ${i.apiUrl}   (Authorization: Bearer ${i.token})
  Temporal UI       ${i.temporalUiUrl}
  Temporal          ${i.temporalAddress} (namespace ${i.temporalNamespace})
  DynamoDB Local    ${i.dynamodbEndpoint}
  EC2 endpoint      ${i.ec2Endpoint}   (admin: ${i.ec2Endpoint}/_admin/faults)
  Price List API    ${i.pricingEndpoint}   (synthetic prices)
  User pool         ${i.userPoolId} (app client ${i.userPoolClientId}) at ${i.cognitoEndpoint}
  logs              ${join(stateDir, 'data', 'logs')}
  stack file        ${stackFile}`);
}

main().catch((err: unknown) => {
  const known =
    err instanceof ToolchainError ||
    err instanceof ConfigError ||
    (err as Error).name === 'PortInUseError';
  console.error(known ? `error: ${(err as Error).message}` : err);
  process.exit(1);
});
